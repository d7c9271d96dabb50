//! A step-ramp run's plot (`ramp-<run>`): p99 and failed share against the offered rate,
//! the objective's p99 bound, and the saturation under each definition.

use super::*;

struct Step {
    x: f64,
    p99: Option<f64>,
    failed_pct: Option<f64>,
}

pub(super) fn ramp(run: &RunFigures, id: String) -> Result<Plot, PlotError> {
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
