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

mod bars;
mod cpu;
mod fault;
mod ramp;
use bars::{efficiency, memory};
use cpu::cpu;
use fault::fault;
use ramp::ramp;

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

#[cfg(test)]
mod tests;
