//! The study's bar charts (`study-efficiency`, `study-memory`): the median over
//! repetitions per contender and profile, with the bootstrap interval where there is one.

use super::*;

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

pub(super) fn efficiency(report: &StudyReport) -> Result<Plot, PlotError> {
    bar_plot(
        "study-efficiency".into(),
        "Efficiency: served requests per replica core-second".into(),
        &bars_of(&report.summary, "requests_per_core_second", 1.0),
        "requests served per replica core-second (1/core·s), measured phase",
        "no run has a requests_per_core_second for its replicas",
    )
}

pub(super) fn memory(report: &StudyReport) -> Result<Plot, PlotError> {
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
