//! The report's plots, as standalone SVG drawn with plotters (docs/analysis.md defines
//! every figure they show):
//!
//! - per step-ramp run (`ramp-<run>`): p99 and failed share against the offered rate, the
//!   objective's p99 bound, and the saturation under each definition;
//! - per fault run (`fault-<run>`): throughput and p99 per second, the fault and its observe
//!   window shaded, when it was detected and when the service recovered;
//! - per run (`cpu-<run>`): each container role's CPU as a share of its cap over time;
//! - across the study (`study-efficiency`, `study-memory`): requests per replica
//!   core-second and the replicas' peak working set, the median over repetitions per contender and
//!   profile, with the bootstrap interval where there is one.
//!
//! Text stays SVG `<text>` (plotters without a font feature reads no font from disk), so
//! the page that inlines a plot sets its fonts. A plot with nothing to draw says "no data"
//! rather than failing.

use std::collections::BTreeSet;
use std::ops::Range;

use feedbench_core::report::ramp::DEFINITIONS;
use feedbench_core::report::rows::{Row, BELOW_FIRST_STEP, NOT_REACHED};
use feedbench_core::report::run::RunFigures;
use feedbench_core::report::summary::SummaryRow;
use feedbench_core::report::usage::REPLICAS;
use feedbench_core::report::StudyReport;
use plotters::coord::combinators::WithKeyPoints;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

mod fault;
use fault::fault;

/// Every plot's width in pixels.
pub const WIDTH: u32 = 1200;
/// Every plot's height in pixels, but the bar charts', which grow with their bars.
pub const HEIGHT: u32 = 500;

const TITLE_H: u32 = 44;
const LEGEND_W: u32 = 340;
const FONT: &str = "sans-serif";
/// plotters' font sizes; the SVG's are these divided by 1.24.
const TICK_SIZE: u32 = 17;
const DESC_SIZE: u32 = 19;
const LEGEND_SIZE: u32 = 16;
const MARK_SIZE: u32 = 15;

/// One plot: a stable, HTML-id-safe id, its title, and one standalone `<svg>` element (no
/// XML declaration), ready to be inlined in a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    pub id: String,
    pub title: String,
    pub svg: String,
}

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("cannot draw the plot `{id}`: {message}")]
    Draw { id: String, message: String },
}

/// Every plot of the study: the study's two first, then each run's in report order.
pub fn plots(report: &StudyReport) -> Result<Vec<Plot>, PlotError> {
    let mut out = vec![efficiency(report)?, memory(report)?];
    let mut used = BTreeSet::new();
    for run in &report.runs {
        let slug = unique(&mut used, slug(&run.key.run));
        if !run.frame.steps.is_empty() {
            out.push(ramp(run, format!("ramp-{slug}"))?);
        }
        if run.frame.fault_window.is_some() {
            out.push(fault(run, format!("fault-{slug}"))?);
        }
        out.push(cpu(run, format!("cpu-{slug}"))?);
    }
    Ok(out)
}

/// Lowercase ASCII letters, digits and single dashes: `feed-go.cache/steady+kill/r2` →
/// `feed-go-cache-steady-kill-r2`.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        out.push_str("run");
    }
    out
}

fn unique(used: &mut BTreeSet<String>, s: String) -> String {
    let mut candidate = s.clone();
    let mut k = 2;
    while !used.insert(candidate.clone()) {
        candidate = format!("{s}-{k}");
        k += 1;
    }
    candidate
}

// ---------------------------------------------------------------------------------------
// Drawing in general

/// A drawing failure, before it is given the plot's id.
struct Failure(String);

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for Failure {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        Failure(e.to_string())
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Draws one plot into a string and makes it a standalone `<svg>` element.
fn render(
    id: &str,
    height: u32,
    draw: impl FnOnce(&Area<'_>) -> Result<(), Failure>,
) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(Failure::from)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(Failure::from))
            .map_err(|Failure(message)| PlotError::Draw {
                id: id.to_string(),
                message,
            })?;
    }
    Ok(standalone(&svg))
}

/// The `<svg>` element alone: any XML declaration or doctype before it is dropped.
fn standalone(svg: &str) -> String {
    match svg.find("<svg") {
        Some(i) => svg[i..].trim_end().to_string(),
        None => svg.trim().to_string(),
    }
}

const C_BLUE: RGBColor = RGBColor(31, 119, 180);
const C_ORANGE: RGBColor = RGBColor(255, 127, 14);
const C_GREEN: RGBColor = RGBColor(44, 160, 44);
const C_RED: RGBColor = RGBColor(214, 39, 40);
const C_PURPLE: RGBColor = RGBColor(148, 103, 189);
const C_BROWN: RGBColor = RGBColor(140, 86, 75);
const C_PINK: RGBColor = RGBColor(227, 119, 194);
const C_GREY: RGBColor = RGBColor(110, 110, 110);
const C_OLIVE: RGBColor = RGBColor(158, 160, 24);
const C_CYAN: RGBColor = RGBColor(23, 170, 187);
const C_GOLD: RGBColor = RGBColor(190, 140, 0);
const C_INK: RGBColor = RGBColor(30, 30, 30);

/// Distinct colours for series without a colour of their own (roles, contenders).
const PALETTE: [RGBColor; 10] = [
    C_BLUE, C_ORANGE, C_GREEN, C_RED, C_PURPLE, C_BROWN, C_PINK, C_GREY, C_OLIVE, C_CYAN,
];

fn font(size: u32) -> FontDesc<'static> {
    (FONT, size).into_font()
}

fn text(size: u32, color: &RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    font(size).color(color).pos(Pos::new(h, v))
}

/// A number for a label: three significant figures or so, no trailing zeros.
fn num(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

fn tick(v: &f64) -> String {
    num(*v)
}

/// The title band and the body under it, split into the chart and the legend beside it.
fn layout<'a>(root: &Area<'a>, title: &str) -> Result<(Area<'a>, Area<'a>), Failure> {
    let (top, body) = root.split_vertically(TITLE_H);
    top.draw(&Text::new(
        title.to_string(),
        (16, TITLE_H as i32 / 2 + 2),
        (FONT, 24, FontStyle::Bold)
            .into_font()
            .color(&C_INK)
            .pos(Pos::new(HPos::Left, VPos::Center)),
    ))?;
    Ok(body.split_horizontally(WIDTH - LEGEND_W))
}

/// A plot with nothing to draw: its title and "no data", with why.
fn no_data(root: &Area<'_>, title: &str, why: &str) -> Result<(), Failure> {
    let (top, body) = root.split_vertically(TITLE_H);
    top.draw(&Text::new(
        title.to_string(),
        (16, TITLE_H as i32 / 2 + 2),
        (FONT, 24, FontStyle::Bold)
            .into_font()
            .color(&C_INK)
            .pos(Pos::new(HPos::Left, VPos::Center)),
    ))?;
    let (w, h) = body.dim_in_pixel();
    let (cx, cy) = (w as i32 / 2, h as i32 / 2);
    body.draw(&Rectangle::new(
        [(16, 8), (w as i32 - 16, h as i32 - 16)],
        ShapeStyle {
            color: C_GREY.mix(0.5),
            filled: false,
            stroke_width: 1,
        },
    ))?;
    body.draw(&Text::new(
        "no data",
        (cx, cy - 14),
        text(34, &C_GREY, HPos::Center, VPos::Center),
    ))?;
    body.draw(&Text::new(
        why.to_string(),
        (cx, cy + 22),
        text(LEGEND_SIZE, &C_GREY, HPos::Center, VPos::Center),
    ))?;
    Ok(())
}

/// What a legend entry shows before its label.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Swatch {
    Line,
    Dashed,
    Block,
    /// No swatch: a heading or a note.
    Bare,
}

struct Key {
    label: String,
    color: RGBAColor,
    swatch: Swatch,
}

fn key(label: impl Into<String>, color: impl Color, swatch: Swatch) -> Key {
    Key {
        label: label.into(),
        color: color.to_rgba(),
        swatch,
    }
}

/// The legend, in the band right of the chart, one entry a line.
fn draw_legend(area: &Area<'_>, keys: &[Key]) -> Result<(), Failure> {
    if keys.is_empty() {
        return Ok(());
    }
    let row = 22;
    let top = 14;
    let (w, _) = area.dim_in_pixel();
    area.draw(&Rectangle::new(
        [
            (6, top - 6),
            (w as i32 - 8, top + 6 + row * keys.len() as i32),
        ],
        ShapeStyle {
            color: C_GREY.mix(0.4),
            filled: false,
            stroke_width: 1,
        },
    ))?;
    for (i, k) in keys.iter().enumerate() {
        let y = top + row * i as i32 + row / 2;
        let (x0, x1) = (16, 46);
        match k.swatch {
            Swatch::Line => {
                area.draw(&PathElement::new(
                    vec![(x0, y), (x1, y)],
                    k.color.stroke_width(3),
                ))?;
            }
            Swatch::Dashed => {
                for (a, b) in [(x0, x0 + 8), (x0 + 12, x0 + 19), (x0 + 23, x1)] {
                    area.draw(&PathElement::new(
                        vec![(a, y), (b, y)],
                        k.color.stroke_width(2),
                    ))?;
                }
            }
            Swatch::Block => {
                area.draw(&Rectangle::new(
                    [(x0, y - 7), (x1, y + 7)],
                    k.color.filled(),
                ))?;
            }
            Swatch::Bare => {}
        }
        let x = if k.swatch == Swatch::Bare { x0 } else { x1 + 8 };
        area.draw(&Text::new(
            k.label.clone(),
            (x, y),
            text(LEGEND_SIZE, &C_INK, HPos::Left, VPos::Center),
        ))?;
    }
    Ok(())
}

/// A vertical mark at `px` (backend pixels), with a short label.
struct Mark {
    px: i32,
    short: String,
    color: RGBColor,
}

/// Vertical dashed lines across the plot area, one per mark; marks on the same pixel
/// share their line, its dashes taking each one's colour in turn. Labels go at the top,
/// stacked so that none covers another; a label with no room left is not drawn (the
/// legend has it).
fn draw_marks(
    root: &Area<'_>,
    plot: &(Range<i32>, Range<i32>),
    marks: &[Mark],
) -> Result<(), Failure> {
    let (xs, ys) = plot;
    let mut marks: Vec<&Mark> = marks
        .iter()
        .filter(|m| m.px >= xs.start && m.px <= xs.end)
        .collect();
    marks.sort_by_key(|m| m.px);
    let mut i = 0;
    while i < marks.len() {
        let mut j = i + 1;
        while j < marks.len() && marks[j].px - marks[i].px <= 1 {
            j += 1;
        }
        let group = &marks[i..j];
        let (dash, gap) = (8, 4);
        let mut y = ys.start;
        let mut k = 0;
        while y < ys.end {
            let color = group[k % group.len()].color;
            root.draw(&PathElement::new(
                vec![(group[0].px, y), (group[0].px, (y + dash).min(ys.end))],
                color.stroke_width(2),
            ))?;
            y += dash + gap;
            k += 1;
        }
        i = j;
    }
    let row_h = 18;
    let rows = ((ys.end - ys.start - 8) / row_h).max(0) as usize;
    let mut taken: Vec<Vec<(i32, i32)>> = vec![Vec::new(); rows];
    for m in &marks {
        let w = (m.short.len() as f64 * 6.9) as i32 + 8;
        let right = m.px + 4 + w <= xs.end;
        let (a, b) = if right {
            (m.px + 4, m.px + 4 + w)
        } else {
            (m.px - 4 - w, m.px - 4)
        };
        let Some(r) = taken
            .iter()
            .position(|row| row.iter().all(|&(p, q)| b < p || a > q))
        else {
            continue;
        };
        taken[r].push((a, b));
        let y = ys.start + 4 + row_h * r as i32;
        root.draw(&Rectangle::new(
            [(a, y), (b, y + row_h - 2)],
            WHITE.mix(0.85).filled(),
        ))?;
        let (x, anchor) = if right {
            (a + 3, HPos::Left)
        } else {
            (b - 3, HPos::Right)
        };
        root.draw(&Text::new(
            m.short.clone(),
            (x, y + (row_h - 2) / 2),
            text(MARK_SIZE, &m.color, anchor, VPos::Center),
        ))?;
    }
    Ok(())
}

/// The runs of consecutive points with a value, for lines with gaps where there is none.
fn segments(points: impl IntoIterator<Item = (f64, Option<f64>)>) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    for (x, y) in points {
        match y.filter(|y| y.is_finite()) {
            Some(y) if x.is_finite() => current.push((x, y)),
            _ => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// `[lo, hi]` with a little room either side (a whole unit or a tenth around one value).
fn padded(lo: f64, hi: f64) -> Range<f64> {
    if !(lo.is_finite() && hi.is_finite()) {
        return 0.0..1.0;
    }
    let span = hi - lo;
    if span <= f64::EPSILON * hi.abs().max(1.0) {
        let d = (lo.abs() * 0.1).max(1.0);
        return (lo - d)..(hi + d);
    }
    (lo - 0.04 * span)..(hi + 0.04 * span)
}

/// From zero to a little above the largest value, at least `floor`.
fn from_zero(values: impl Iterator<Item = f64>, floor: f64) -> Range<f64> {
    let max = values.filter(|v| v.is_finite()).fold(0.0, f64::max);
    0.0..(max * 1.12).max(floor)
}

/// A log axis over the positive values, with room above and below.
fn log_range(values: impl Iterator<Item = f64>) -> Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if hi <= 0.0 {
        return 1.0..10.0;
    }
    (lo / 1.6)..(hi * 1.6)
}

/// A log axis's ticks, 1, 2 and 5 times the powers of ten in the range (only the powers
/// when that is too many), and its light lines at every other digit.
fn log_ticks(r: &Range<f64>) -> (Vec<f64>, Vec<f64>) {
    let (lo, hi) = (r.start, r.end);
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return (Vec::new(), Vec::new());
    }
    let digits: Vec<f64> = (lo.log10().floor() as i32..=hi.log10().ceil() as i32)
        .flat_map(|k| (1..10).map(move |m| m as f64 * 10f64.powi(k)))
        .filter(|v| *v >= lo && *v <= hi)
        .collect();
    let first = |v: f64| v / 10f64.powf(v.log10().floor());
    let is = |v: f64, ms: &[f64]| ms.iter().any(|m| (first(v) - m).abs() < 1e-6);
    let mut bold: Vec<f64> = digits
        .iter()
        .copied()
        .filter(|v| is(*v, &[1.0, 2.0, 5.0]))
        .collect();
    if bold.len() > 10 {
        bold.retain(|v| is(*v, &[1.0]));
    }
    let light = digits.into_iter().filter(|v| !bold.contains(v)).collect();
    (bold, light)
}

fn log_axis(r: &Range<f64>) -> WithKeyPoints<LogCoord<f64>> {
    let (bold, light) = log_ticks(r);
    r.clone()
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
}

fn min_max(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.filter(|v| v.is_finite()).fold(None, |m, v| match m {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

fn same_step(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * b.abs().max(1.0),
        _ => false,
    }
}

/// The run's row that is not per second, by what it is about.
fn find<'a>(
    rows: &'a [Row],
    step: Option<f64>,
    container: &str,
    definition: &str,
    metric: &str,
) -> Option<&'a Row> {
    rows.iter().find(|r| {
        r.second.is_none()
            && same_step(r.step_rate, step)
            && r.container == container
            && r.definition == definition
            && r.metric == metric
    })
}

/// Why a row has no value, for a legend.
fn why_empty(row: Option<&Row>) -> String {
    match row {
        None => "no row".into(),
        Some(r) if r.note.is_empty() => "none".into(),
        Some(r) => r.note.clone(),
    }
}

fn mesh_style<'a, 'b, 'c, X, Y>(
    mesh: &'c mut plotters::chart::MeshStyle<'a, 'b, X, Y, SVGBackend<'a>>,
) -> &'c mut plotters::chart::MeshStyle<'a, 'b, X, Y, SVGBackend<'a>>
where
    X: Ranged,
    Y: Ranged,
{
    mesh.label_style(font(TICK_SIZE))
        .axis_desc_style(font(DESC_SIZE))
        .light_line_style(C_GREY.mix(0.08))
        .bold_line_style(C_GREY.mix(0.25))
}

// ---------------------------------------------------------------------------------------
// A step ramp

struct Step {
    x: f64,
    p99: Option<f64>,
    failed_pct: Option<f64>,
}

fn ramp(run: &RunFigures, id: String) -> Result<Plot, PlotError> {
    let title = format!("{}: p99 and failed share by offered rate", run.key.run);
    let rows = &run.rows;
    let steps: Vec<(f64, Step)> = run
        .frame
        .steps
        .iter()
        .map(|s| {
            let v = |m: &str| find(rows, Some(s.rate), "", "", m).and_then(|r| r.value);
            let step = Step {
                x: v("step_offered_rate").unwrap_or(s.rate),
                p99: v("step_p99"),
                failed_pct: v("step_failed_share").map(|f| f * 100.0),
            };
            (s.rate, step)
        })
        .collect();
    let bound = run.frame.objective.p99_ms;
    let svg = render(&id, HEIGHT, |root| {
        if steps
            .iter()
            .all(|(_, s)| s.p99.is_none() && s.failed_pct.is_none())
        {
            return no_data(
                root,
                &title,
                "no step of the ramp has a p99 or a failed share in metrics.csv",
            );
        }
        let (area, legend) = layout(root, &title)?;
        let Some((x_lo, x_hi)) = min_max(steps.iter().map(|(_, s)| s.x)) else {
            return no_data(root, &title, "the ramp has no step");
        };
        let xr = padded(x_lo, x_hi);
        let yr = log_range(
            steps
                .iter()
                .filter_map(|(_, s)| s.p99)
                .chain(std::iter::once(bound)),
        );
        let y2 = {
            let r = from_zero(steps.iter().filter_map(|(_, s)| s.failed_pct), 5.0);
            0.0..r.end.min(105.0)
        };
        let mut chart = ChartBuilder::on(&area)
            .margin(12)
            .x_label_area_size(56)
            .y_label_area_size(84)
            .right_y_label_area_size(84)
            .build_cartesian_2d(xr.clone(), log_axis(&yr))?
            .set_secondary_coord(xr.clone(), y2.clone());
        mesh_style(&mut chart.configure_mesh())
            .x_desc("offered rate (1/s)")
            .y_desc("p99 latency (ms, log scale)")
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .draw()?;
        chart
            .configure_secondary_axes()
            .label_style(font(TICK_SIZE))
            .axis_desc_style(font(DESC_SIZE))
            .y_desc("failed share (%)")
            .y_label_formatter(&tick)
            .draw()?;

        chart.draw_series(DashedLineSeries::new(
            vec![(xr.start, bound), (xr.end, bound)],
            10,
            6,
            C_INK.stroke_width(2),
        ))?;
        let p99 = segments(steps.iter().map(|(_, s)| (s.x, s.p99)));
        for seg in &p99 {
            chart.draw_series(LineSeries::new(seg.clone(), C_BLUE.stroke_width(3)))?;
            chart.draw_series(seg.iter().map(|&p| Circle::new(p, 4, C_BLUE.filled())))?;
        }
        let failed = segments(steps.iter().map(|(_, s)| (s.x, s.failed_pct)));
        for seg in &failed {
            chart.draw_secondary_series(LineSeries::new(seg.clone(), C_RED.stroke_width(2)))?;
            chart.draw_secondary_series(
                seg.iter()
                    .map(|&p| TriangleMarker::new(p, 6, C_RED.filled())),
            )?;
        }

        let mut keys = vec![
            key("p99 per step (left axis)", C_BLUE, Swatch::Line),
            key("failed share per step (right axis)", C_RED, Swatch::Line),
            key(
                format!("objective: p99 ≤ {} ms", num(bound)),
                C_INK,
                Swatch::Dashed,
            ),
            key("saturation (1/s), by definition:", C_INK, Swatch::Bare),
        ];
        let px = |x: f64| chart.backend_coord(&(x, yr.start)).0;
        let (more, marks) = saturation_marks(rows, &steps, &px);
        keys.extend(more);
        draw_marks(root, &chart.plotting_area().get_pixel_range(), &marks)?;
        draw_legend(&legend, &keys)
    })?;
    Ok(Plot { id, title, svg })
}

/// Each definition's saturation as a legend key and a mark at that step's offered rate
/// (`px`: a rate's pixel); one with no value says why in its key.
fn saturation_marks(
    rows: &[Row],
    steps: &[(f64, Step)],
    px: &dyn Fn(f64) -> i32,
) -> (Vec<Key>, Vec<Mark>) {
    let colors = [C_GREEN, C_PURPLE, C_BROWN, C_PINK, C_CYAN];
    let (mut keys, mut marks) = (Vec::new(), Vec::new());
    // A saturation is a step's rate; it is marked at that step's offered rate.
    let x_of = |rate: f64| {
        steps
            .iter()
            .find(|(r, _)| same_step(Some(*r), Some(rate)))
            .map_or(rate, |(_, s)| s.x)
    };
    for (d, color) in DEFINITIONS.iter().zip(colors) {
        let row = find(rows, None, "", d, "saturation");
        match row.and_then(|r| r.value.map(|v| (v, r.note.as_str()))) {
            Some((v, note)) => {
                let (label, short) = if note == NOT_REACHED {
                    (format!("{d}: ≥ {}, not reached", num(v)), format!("{d} ≥"))
                } else if note == BELOW_FIRST_STEP {
                    (format!("{d}: below {}", num(v)), format!("{d} <"))
                } else {
                    (format!("{d}: {}", num(v)), d.to_string())
                };
                keys.push(key(label, color, Swatch::Dashed));
                marks.push(Mark {
                    px: px(x_of(v)),
                    short,
                    color,
                });
            }
            None => keys.push(key(
                format!("{d}: {}", why_empty(row)),
                color,
                Swatch::Dashed,
            )),
        }
    }
    (keys, marks)
}

// ---------------------------------------------------------------------------------------
// CPU per role

fn cpu(run: &RunFigures, id: String) -> Result<Plot, PlotError> {
    let title = format!("{}: CPU per container role", run.key.run);
    let len = run.frame.measured.len_s();
    let lines: Vec<(&str, Vec<(f64, f64)>)> = run
        .cpu
        .iter()
        .map(|(role, pts)| {
            let pts = pts
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            (role.as_str(), pts)
        })
        .collect();
    let svg = render(&id, HEIGHT, |root| {
        let Some((x_lo, x_hi)) = min_max(lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)))
        else {
            return no_data(
                root,
                &title,
                "containers.csv gave no CPU interval for any container",
            );
        };
        let (area, legend) = layout(root, &title)?;
        let xr = {
            let (a, b) = (x_lo.min(0.0), x_hi.max(len));
            if b > a {
                a..b
            } else {
                padded(a, b)
            }
        };
        let yr = from_zero(
            lines
                .iter()
                .flat_map(|(_, p)| p.iter().map(|q| q.1))
                .chain(std::iter::once(100.0)),
            1.0,
        );
        let mut chart = ChartBuilder::on(&area)
            .margin(12)
            .margin_right(28)
            .x_label_area_size(56)
            .y_label_area_size(84)
            .build_cartesian_2d(xr.clone(), yr.clone())?;
        mesh_style(&mut chart.configure_mesh())
            .x_desc("time since the measured phase's start (s)")
            .y_desc("CPU (% of the container's cap)")
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .draw()?;
        chart.draw_series(DashedLineSeries::new(
            vec![(xr.start, 100.0), (xr.end, 100.0)],
            10,
            6,
            C_INK.stroke_width(1),
        ))?;
        let mut keys = vec![key("the cap (100 %)", C_INK, Swatch::Dashed)];
        for (k, (role, pts)) in lines.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            if pts.len() == 1 {
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            } else {
                chart.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?;
            }
            let label = if pts.is_empty() {
                format!("{role}: no CPU interval")
            } else {
                role.to_string()
            };
            keys.push(key(label, color, Swatch::Line));
        }
        let mut marks = Vec::new();
        let px = |x: f64| chart.backend_coord(&(x, yr.start)).0;
        if xr.start < 0.0 {
            marks.push(Mark {
                px: px(0.0),
                short: "measured start".into(),
                color: C_GREY,
            });
        }
        if xr.end > len {
            marks.push(Mark {
                px: px(len),
                short: "measured end".into(),
                color: C_GREY,
            });
        }
        if !marks.is_empty() {
            keys.push(key("the measured phase's bounds", C_GREY, Swatch::Dashed));
        }
        draw_marks(root, &chart.plotting_area().get_pixel_range(), &marks)?;
        draw_legend(&legend, &keys)
    })?;
    Ok(Plot { id, title, svg })
}

// ---------------------------------------------------------------------------------------
// Across the study: bars per contender and profile

struct Bar {
    label: String,
    contender: String,
    n: usize,
    median: Option<f64>,
    ci: Option<(f64, f64)>,
}

fn bars_of(summary: &[SummaryRow], metric: &str, scale: f64) -> Vec<Bar> {
    summary
        .iter()
        .filter(|r| {
            r.container == REPLICAS
                && r.definition == "measured"
                && r.metric == metric
                && r.step_rate.is_none()
        })
        .map(|r| {
            let contender = if r.variant.is_empty() {
                r.contender.clone()
            } else {
                format!("{}.{}", r.contender, r.variant)
            };
            let mut label = format!("{contender} · {}", r.profile);
            if !r.fault.is_empty() {
                label.push_str(&format!(" + {}", r.fault));
            }
            let ok = |v: f64| v.is_finite().then_some(v * scale);
            Bar {
                label,
                contender,
                n: r.n,
                median: r.median.and_then(ok),
                ci: r.ci_low.and_then(ok).zip(r.ci_high.and_then(ok)),
            }
        })
        .collect()
}

fn efficiency(report: &StudyReport) -> Result<Plot, PlotError> {
    bar_plot(
        "study-efficiency".into(),
        "Efficiency: served requests per replica core-second".into(),
        &bars_of(&report.summary, "requests_per_core_second", 1.0),
        "requests served per replica core-second (1/core·s), measured phase",
        "no run has a requests_per_core_second for its replicas",
    )
}

fn memory(report: &StudyReport) -> Result<Plot, PlotError> {
    bar_plot(
        "study-memory".into(),
        "Memory: the replicas' peak working set".into(),
        &bars_of(
            &report.summary,
            "memory_working_set_peak",
            1.0 / (1024.0 * 1024.0),
        ),
        "peak working set of the replicas (usage less inactive file pages), summed per sample (MiB), measured phase",
        "no run has a memory_working_set_peak for its replicas (containers.csv had no working set)",
    )
}

/// Horizontal bars, one per contender and profile (and fault): the median over the
/// repetitions, with its bootstrap interval when there is one.
fn bar_plot(
    id: String,
    title: String,
    bars: &[Bar],
    x_desc: &str,
    empty: &str,
) -> Result<Plot, PlotError> {
    let n = bars.len();
    let height = HEIGHT.max(TITLE_H + 130 + 36 * n as u32);
    let svg = render(&id, height, |root| {
        if bars.iter().all(|b| b.median.is_none()) {
            return no_data(root, &title, empty);
        }
        let (area, legend) = layout(root, &title)?;
        let hi = bars
            .iter()
            .flat_map(|b| b.median.into_iter().chain(b.ci.map(|c| c.1)))
            .fold(0.0, f64::max);
        let xr = 0.0..(hi * 1.3).max(1e-9);
        let yr = -0.5..(n as f64 - 0.5);
        let longest = bars.iter().map(|b| b.label.len()).max().unwrap_or(0);
        let label_w = ((longest as f64 * 7.6) as u32 + 24).clamp(80, 420);
        let mut chart = ChartBuilder::on(&area)
            .margin(12)
            .margin_right(28)
            .x_label_area_size(56)
            .y_label_area_size(label_w)
            .build_cartesian_2d(xr.clone(), yr.clone())?;
        mesh_style(&mut chart.configure_mesh())
            .disable_y_mesh()
            .y_labels(0)
            .x_desc(x_desc)
            .x_label_formatter(&tick)
            .draw()?;
        let mut contenders: Vec<&str> = Vec::new();
        for b in bars {
            if !contenders.contains(&b.contender.as_str()) {
                contenders.push(&b.contender);
            }
        }
        let color_of = |c: &str| {
            let k = contenders.iter().position(|x| *x == c).unwrap_or(0);
            PALETTE[k % PALETTE.len()]
        };
        let (xs, _) = chart.plotting_area().get_pixel_range();
        let mut any_ci = false;
        for (i, b) in bars.iter().enumerate() {
            // The first bar at the top.
            let y = (n - 1 - i) as f64;
            let color = color_of(&b.contender);
            let py = chart.backend_coord(&(0.0, y)).1;
            root.draw(&Text::new(
                b.label.clone(),
                (xs.start - 10, py),
                text(TICK_SIZE, &C_INK, HPos::Right, VPos::Center),
            ))?;
            let Some(v) = b.median else {
                chart.draw_series(std::iter::once(
                    EmptyElement::at((0.0, y))
                        + Text::new(
                            format!("no data (n = {})", b.n),
                            (8, 0),
                            text(LEGEND_SIZE, &C_GREY, HPos::Left, VPos::Center),
                        ),
                ))?;
                continue;
            };
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y - 0.32), (v, y + 0.32)],
                color.filled(),
            )))?;
            let mut end = v;
            if let Some((lo, hi)) = b.ci {
                any_ci = true;
                end = end.max(hi);
                let ink = C_INK.stroke_width(2);
                chart.draw_series([
                    PathElement::new(vec![(lo, y), (hi, y)], ink),
                    PathElement::new(vec![(lo, y - 0.15), (lo, y + 0.15)], ink),
                    PathElement::new(vec![(hi, y - 0.15), (hi, y + 0.15)], ink),
                ])?;
            }
            chart.draw_series(std::iter::once(
                EmptyElement::at((end, y))
                    + Text::new(
                        format!("{} (n = {})", num(v), b.n),
                        (8, 0),
                        text(LEGEND_SIZE, &C_INK, HPos::Left, VPos::Center),
                    ),
            ))?;
        }
        let mut keys: Vec<Key> = contenders
            .iter()
            .map(|c| key(*c, color_of(c), Swatch::Block))
            .collect();
        keys.push(key("bar: the median over repetitions", C_INK, Swatch::Bare));
        if any_ci {
            keys.push(key(
                "exact interval of the median (n ≥ 3)",
                C_INK,
                Swatch::Line,
            ));
        }
        draw_legend(&legend, &keys)
    })?;
    Ok(Plot { id, title, svg })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use feedbench_core::report::faults::Instants;
    use feedbench_core::report::latency::Second;
    use feedbench_core::report::rows::{RunKey, NOT_OBSERVED, NOT_RECOVERED};
    use feedbench_core::rundir::frame::{
        Cap, FaultWindow, Frame, FrameObjective, FrameStep, RecoveryRule, Span,
    };

    use super::*;

    const S: i128 = 1_000_000_000;
    const T0: i128 = 1_700_000_000 * S;

    fn frame(contender: &str, profile: &str, fault: Option<&str>) -> Frame {
        let caps: BTreeMap<String, Cap> = [
            ("s-replica-1", "replica-1"),
            ("s-replica-2", "replica-2"),
            ("s-balancer", "balancer"),
        ]
        .iter()
        .map(|(n, r)| {
            (
                n.to_string(),
                Cap {
                    role: r.to_string(),
                    cpus: 1.0,
                },
            )
        })
        .collect();
        Frame {
            contender: contender.into(),
            variant: None,
            profile: profile.into(),
            fault: fault.map(str::to_string),
            repetition: 1,
            measured: Span {
                start_ns: T0,
                end_ns: T0 + 60 * S,
                offered_arrivals: 6000.0,
            },
            steps: Vec::new(),
            objective: FrameObjective {
                p99_ms: 50.0,
                failed_share: 0.01,
                window_ns: 10 * S,
            },
            fault_window: fault.map(|f| FaultWindow {
                name: f.into(),
                injection: "kill-replica".into(),
                observe_ns: 20 * S,
                server: Some("replica-1".into()),
            }),
            caps,
            recovery: RecoveryRule {
                window_ns: 10 * S,
                step_ns: S / 10,
                hold_ns: 10 * S,
                throughput_tolerance: 0.05,
                latency_tolerance: 0.1,
            },
            stopped: None,
            confirm_steps: None,
            expected_4xx: BTreeMap::new(),
            judged_by: Default::default(),
        }
    }

    fn key_of(run: &str, frame: &Frame) -> RunKey {
        feedbench_core::report::run::key_of(run, frame)
    }

    /// A row at `(step_rate, container, definition)`.
    fn row(
        key: &RunKey,
        (step_rate, container, definition): (Option<f64>, &str, &str),
        metric: &str,
        value: Option<f64>,
        unit: &str,
        note: &str,
    ) -> Row {
        Row {
            key: key.clone(),
            step_rate,
            second: None,
            container: container.into(),
            definition: definition.into(),
            metric: metric.into(),
            value,
            unit: unit.into(),
            note: note.into(),
        }
    }

    fn usage_rows(key: &RunKey, efficiency: f64, rss: Option<f64>) -> Vec<Row> {
        vec![
            row(
                key,
                (None, REPLICAS, "measured"),
                "requests_per_core_second",
                Some(efficiency),
                "1/core·s",
                "",
            ),
            row(
                key,
                (None, REPLICAS, "measured"),
                "memory_working_set_peak",
                rss,
                "bytes",
                if rss.is_none() { "none" } else { "" },
            ),
        ]
    }

    fn cpu_series() -> Vec<(String, Vec<(f64, f64)>)> {
        ["balancer", "replica-1", "replica-2"]
            .iter()
            .enumerate()
            .map(|(k, role)| {
                let pts = (-5..60)
                    .map(|t| (t as f64, 20.0 + 10.0 * k as f64 + (t % 7) as f64))
                    .collect();
                (role.to_string(), pts)
            })
            .collect()
    }

    fn ramp_run() -> RunFigures {
        let run = "feed-rs/ramp/r1";
        let mut frame = frame("feed-rs", "ramp", None);
        let rates = [100.0, 200.0, 300.0, 400.0, 500.0];
        frame.steps = rates
            .iter()
            .enumerate()
            .map(|(k, &rate)| FrameStep {
                rate,
                start_ns: T0 + 12 * S * k as i128,
                end_ns: T0 + 12 * S * (k as i128 + 1),
                offered_arrivals: rate * 12.0,
            })
            .collect();
        let key = key_of(run, &frame);
        let mut rows = Vec::new();
        for (k, &rate) in rates.iter().enumerate() {
            let s = Some(rate);
            rows.push(row(&key, (s, "", ""), "step_offered_rate", s, "1/s", ""));
            let p99 = [8.0, 9.0, 12.0, 70.0, 900.0][k];
            rows.push(row(&key, (s, "", ""), "step_p99", Some(p99), "ms", ""));
            let failed = [0.0, 0.0, 0.001, 0.02, 0.3][k];
            rows.push(row(
                &key,
                (s, "", ""),
                "step_failed_share",
                Some(failed),
                "ratio",
                "",
            ));
        }
        for (d, sat) in DEFINITIONS.iter().zip([300.0, 300.0, 300.0, 300.0, 400.0]) {
            rows.push(row(&key, (None, "", d), "saturation", Some(sat), "1/s", ""));
        }
        rows.extend(usage_rows(&key, 5200.0, Some(96.0 * 1024.0 * 1024.0)));
        RunFigures {
            key,
            frame,
            rows,
            seconds: Vec::new(),
            instants: None,
            cpu: cpu_series(),
            oom_kills: Vec::new(),
            recorded_objective: None,
            seen_down: None,
        }
    }

    fn fault_run() -> RunFigures {
        let run = "feed-rs/steady+kill/r1";
        let frame = frame("feed-rs", "steady", Some("kill"));
        let key = key_of(run, &frame);
        let seconds: Vec<Second> = (0..60)
            .map(|k| {
                let hit = (20..24).contains(&k);
                Second {
                    start_ns: T0 + k * S,
                    throughput: if hit { 50 } else { 100 },
                    p50: Some(3.0),
                    p99: if k == 21 {
                        None
                    } else if hit {
                        Some(400.0)
                    } else {
                        Some(9.0)
                    },
                    failed: if hit { 5 } else { 0 },
                }
            })
            .collect();
        let mut rows = vec![
            row(
                &key,
                (None, "", ""),
                "detect_balancer_down",
                Some(2.0),
                "s",
                "",
            ),
            row(
                &key,
                (None, "", ""),
                "detect_failed_request",
                Some(0.1),
                "s",
                "",
            ),
            row(
                &key,
                (None, "", ""),
                "detect_objective_window",
                Some(0.5),
                "s",
                "",
            ),
            row(
                &key,
                (None, "", "clear"),
                "time_to_recover",
                Some(3.5),
                "s",
                "",
            ),
            row(
                &key,
                (None, "", "restart"),
                "time_to_recover",
                None,
                "s",
                NOT_RECOVERED,
            ),
            row(
                &key,
                (None, "", ""),
                "control_throughput",
                Some(100.0),
                "1/s",
                "",
            ),
        ];
        rows.extend(usage_rows(&key, 4800.0, None));
        RunFigures {
            key,
            frame,
            rows,
            seconds,
            instants: Some(Instants {
                applied: T0 + 20 * S,
                cleared: Some(T0 + 25 * S),
                restart: Some(T0 + 27 * S),
                observe_end: T0 + 45 * S,
                down: None,
            }),
            cpu: cpu_series(),
            oom_kills: Vec::new(),
            recorded_objective: None,
            seen_down: None,
        }
    }

    fn report(runs: Vec<RunFigures>) -> StudyReport {
        StudyReport::of_runs("s", runs, Vec::new())
    }

    /// To look at the plots: `FEEDBENCH_PLOT_DIR=/tmp/plots cargo test -p feedbench --lib
    /// plots` writes every test's SVGs there.
    fn dump(plots: &[Plot], prefix: &str) {
        if let Some(dir) = std::env::var_os("FEEDBENCH_PLOT_DIR") {
            std::fs::create_dir_all(&dir).unwrap();
            for p in plots {
                let path = std::path::Path::new(&dir).join(format!("{prefix}{}.svg", p.id));
                std::fs::write(path, &p.svg).unwrap();
            }
        }
    }

    fn get<'a>(plots: &'a [Plot], id: &str) -> &'a Plot {
        plots
            .iter()
            .find(|p| p.id == id)
            .unwrap_or_else(|| panic!("no plot `{id}` in {:?}", ids(plots)))
    }

    fn ids(plots: &[Plot]) -> Vec<&str> {
        plots.iter().map(|p| p.id.as_str()).collect()
    }

    fn drawn(svg: &str) -> usize {
        ["<polyline", "<path", "<rect", "<circle", "<polygon"]
            .iter()
            .map(|t| svg.matches(t).count())
            .sum()
    }

    fn assert_has(plot: &Plot, wanted: &[&str]) {
        for t in wanted {
            assert!(
                plot.svg.contains(t),
                "`{}` lacks `{t}`; its texts: {:#?}",
                plot.id,
                texts(&plot.svg)
            );
        }
    }

    fn texts(svg: &str) -> Vec<&str> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| t.split_once('>').and_then(|(_, r)| r.split_once("</text>")))
            .map(|(t, _)| t.trim())
            .collect()
    }

    fn assert_standalone(plot: &Plot) {
        assert!(plot.svg.starts_with("<svg"), "{}", plot.id);
        assert!(plot.svg.ends_with("</svg>"), "{}", plot.id);
        assert!(!plot.svg.contains("<?xml"), "{}", plot.id);
        assert!(plot.svg.contains("xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(plot
            .id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
    }

    #[test]
    fn a_ramp_and_a_fault_run_get_every_plot_with_axes_legends_and_data() {
        let out = plots(&report(vec![ramp_run(), fault_run()])).unwrap();
        dump(&out, "");
        assert_eq!(
            ids(&out),
            [
                "study-efficiency",
                "study-memory",
                "ramp-feed-rs-ramp-r1",
                "cpu-feed-rs-ramp-r1",
                "fault-feed-rs-steady-kill-r1",
                "cpu-feed-rs-steady-kill-r1",
            ]
        );
        for p in &out {
            assert_standalone(p);
            assert!(p.svg.contains(&p.title.replace('\'', "&apos;")), "{}", p.id);
            assert!(drawn(&p.svg) > 5, "{}", p.id);
            assert!(!texts(&p.svg).contains(&"no data"), "{}", p.id);
        }

        let ramp = get(&out, "ramp-feed-rs-ramp-r1");
        assert_has(
            ramp,
            &[
                "offered rate (1/s)",
                "p99 latency (ms, log scale)",
                "failed share (%)",
                "p99 per step (left axis)",
                "failed share per step (right axis)",
                "objective: p99 ≤ 50 ms",
                "objective-windows: 300",
                "throughput-knee: 400",
            ],
        );
        // Two lines (p99, failed share), the bound, and the saturation marks.
        assert!(ramp.svg.matches("<polyline").count() >= 3);
        assert!(ramp.svg.matches("<circle").count() >= 5);

        let fault = get(&out, "fault-feed-rs-steady-kill-r1");
        assert_has(
            fault,
            &[
                "time since the measured phase&apos;s start (s)",
                "throughput (1/s)",
                "p99 latency (ms, log scale)",
                "throughput per second (left axis)",
                "p99 per second (right axis)",
                "fault: applied → cleared",
                "observe window",
                "control throughput: 100 1/s",
                "detected, balancer down: +2 s",
                "detected, failed request: +0.1 s",
                "detected, objective window: +0.5 s",
                "recovered: clear + 3.5 s",
                "recovered (restart): not recovered",
                "replica back in service",
            ],
        );
        // The p99 line has a gap at second 21: two polylines for it, one for throughput.
        assert!(fault.svg.matches("<polyline").count() >= 3);

        let cpu = get(&out, "cpu-feed-rs-ramp-r1");
        assert_has(
            cpu,
            &[
                "CPU (% of the container&apos;s cap)",
                "time since the measured phase&apos;s start (s)",
                "balancer",
                "replica-1",
                "replica-2",
                "the cap (100 %)",
                "measured start",
            ],
        );

        let eff = get(&out, "study-efficiency");
        assert_has(
            eff,
            &[
                "requests served per replica core-second (1/core·s)",
                "feed-rs · ramp",
                "feed-rs · steady + kill",
                "5200 (n = 1)",
                "4800 (n = 1)",
                "bar: the median over repetitions",
            ],
        );
        // The steady run had no working set: its bar says so, the ramp run's is drawn.
        let mem = get(&out, "study-memory");
        assert_has(
            mem,
            &[
                "peak working set of the replicas",
                "(MiB)",
                "96 (n = 1)",
                "no data (n = 0)",
            ],
        );
    }

    #[test]
    fn an_empty_report_and_empty_runs_give_no_data_plots_not_errors() {
        let out = plots(&report(Vec::new())).unwrap();
        dump(&out, "empty-");
        assert_eq!(ids(&out), ["study-efficiency", "study-memory"]);
        for p in &out {
            assert_standalone(p);
            assert!(texts(&p.svg).contains(&"no data"), "{}", p.id);
        }

        let mut ramp = ramp_run();
        ramp.rows.clear();
        ramp.cpu.clear();
        let mut fault = fault_run();
        fault.rows.clear();
        fault.seconds.clear();
        fault.instants = None;
        fault.cpu = vec![("replica-1".into(), Vec::new())];
        let out = plots(&report(vec![ramp, fault])).unwrap();
        dump(&out, "empty-runs-");
        assert_eq!(out.len(), 6);
        for p in &out {
            assert_standalone(p);
            assert!(texts(&p.svg).contains(&"no data"), "{}", p.id);
        }
    }

    #[test]
    fn a_fault_without_its_instants_and_a_ramp_not_reached_still_draw() {
        let mut fault = fault_run();
        // What the core gives when no fault-applied event came: empty rows, not observed.
        fault.instants = None;
        fault.rows.retain(|r| r.metric != "detect_balancer_down");
        for r in fault
            .rows
            .iter_mut()
            .filter(|r| r.metric.starts_with("detect_") || r.metric == "time_to_recover")
        {
            r.value = None;
            r.note = NOT_OBSERVED.into();
        }
        let mut ramp = ramp_run();
        for r in ramp.rows.iter_mut().filter(|r| r.metric == "saturation") {
            r.value = Some(500.0);
            r.note = NOT_REACHED.into();
        }
        ramp.rows
            .retain(|r| !(r.metric == "saturation" && r.definition == "p99-only"));
        let out = plots(&report(vec![ramp, fault])).unwrap();
        dump(&out, "partial-");
        let f = get(&out, "fault-feed-rs-steady-kill-r1");
        assert_has(
            f,
            &[
                "fault never applied (no fault-applied event)",
                "detected, balancer down: no row",
                "detected, failed request: not observed",
                "recovered (clear): not observed",
            ],
        );
        let r = get(&out, "ramp-feed-rs-ramp-r1");
        assert_has(
            r,
            &["objective-windows: ≥ 500, not reached", "p99-only: no row"],
        );
    }

    #[test]
    fn three_repetitions_give_bars_with_their_interval_per_contender() {
        let mut runs = Vec::new();
        for (contender, base) in [("feed-rs", 5000.0), ("feed-go.cache", 3000.0)] {
            for rep in 1..=3u32 {
                let mut run = ramp_run();
                let mut frame = frame(contender, "ramp", None);
                frame.repetition = rep;
                frame.steps = run.frame.steps.clone();
                frame.variant = contender.split_once('.').map(|(_, v)| v.to_string());
                frame.contender = contender.split('.').next().unwrap().into();
                let key = key_of(&format!("{contender}/ramp/r{rep}"), &frame);
                let rss = 64.0 * 1024.0 * 1024.0 * f64::from(rep);
                run.rows = usage_rows(&key, base + 100.0 * f64::from(rep), Some(rss));
                run.key = key;
                run.frame = frame;
                runs.push(run);
            }
        }
        let out = plots(&report(runs)).unwrap();
        dump(&out, "three-");
        let eff = get(&out, "study-efficiency");
        assert_has(
            eff,
            &[
                "feed-go.cache · ramp",
                "feed-rs · ramp",
                "5200 (n = 3)",
                "3200 (n = 3)",
                "exact interval of the median (n ≥ 3)",
            ],
        );
        // Two bars, their intervals (three strokes each), and the legend's swatches.
        assert!(eff.svg.matches("<rect").count() >= 4);
        assert!(eff.svg.matches("<polyline").count() >= 6);
        assert_has(get(&out, "study-memory"), &["128 (n = 3)"]);
        assert!(get(&out, "ramp-feed-go-cache-ramp-r2")
            .svg
            .contains("no data"));
    }

    #[test]
    fn ids_are_slugs_and_unique() {
        assert_eq!(
            slug("feed-go.cache/steady+kill/r2"),
            "feed-go-cache-steady-kill-r2"
        );
        assert_eq!(slug("//"), "run");
        let mut used = BTreeSet::new();
        assert_eq!(unique(&mut used, "a-b".into()), "a-b");
        assert_eq!(unique(&mut used, "a-b".into()), "a-b-2");
        assert_eq!(
            standalone("<?xml version=\"1.0\"?>\n<svg></svg>\n"),
            "<svg></svg>"
        );
        assert_eq!(num(1234.4), "1234");
        assert_eq!(num(0.5), "0.5");
        assert_eq!(num(12.25), "12.2");
        assert_eq!(num(3.0), "3");
        let (bold, light) = log_ticks(&(3.0..80.0));
        assert_eq!(bold, [5.0, 10.0, 20.0, 50.0]);
        assert_eq!(
            light,
            [3.0, 4.0, 6.0, 7.0, 8.0, 9.0, 30.0, 40.0, 60.0, 70.0, 80.0]
        );
    }
}
