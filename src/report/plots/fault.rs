//! A fault run's plot (`fault-<run>`): throughput and p99 per second, the fault and its
//! observe window shaded, when it was detected and when the service recovered.

use feedbench_core::report::faults::Instants;

use super::*;

pub(super) fn fault(run: &RunFigures, id: String) -> Result<Plot, PlotError> {
    let frame = &run.frame;
    let (name, injection) = frame
        .fault_window
        .as_ref()
        .map(|f| (f.name.as_str(), f.injection.as_str()))
        .unwrap_or_default();
    let title = format!("{}: fault {name} ({injection}), per second", run.key.run);
    let rows = &run.rows;
    let t0 = frame.measured.start_ns;
    let at = |ns: i128| (ns - t0) as f64 / 1e9;
    let thr: Vec<(f64, f64)> = run
        .seconds
        .iter()
        .map(|s| (at(s.start_ns), s.throughput as f64))
        .collect();
    let p99 = segments(run.seconds.iter().map(|s| (at(s.start_ns), s.p99)));
    let bound = frame.objective.p99_ms;
    let value = |definition: &str, metric: &str| find(rows, None, "", definition, metric);
    let control = value("", "control_throughput").and_then(|r| r.value);
    let svg = render(&id, HEIGHT, |root| {
        if thr.is_empty() {
            return no_data(
                root,
                &title,
                "the measured phase holds no whole second (no per-second series)",
            );
        }
        let (area, legend) = layout(root, &title)?;
        let last = thr.last().map_or(0.0, |p| p.0 + 1.0);
        let xr = 0.0..frame.measured.len_s().max(last).max(1.0);
        let yr = from_zero(thr.iter().map(|p| p.1).chain(control), 1.0);
        let y2 = log_range(
            p99.iter()
                .flatten()
                .map(|p| p.1)
                .chain(std::iter::once(bound)),
        );
        let mut chart = ChartBuilder::on(&area)
            .margin(12)
            .x_label_area_size(56)
            .y_label_area_size(84)
            .right_y_label_area_size(84)
            .build_cartesian_2d(xr.clone(), yr.clone())?
            .set_secondary_coord(xr.clone(), log_axis(&y2));
        mesh_style(&mut chart.configure_mesh())
            .x_desc("time since the measured phase's start (s)")
            .y_desc("throughput (1/s)")
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .draw()?;
        chart
            .configure_secondary_axes()
            .label_style(font(TICK_SIZE))
            .axis_desc_style(font(DESC_SIZE))
            .y_desc("p99 latency (ms, log scale)")
            .y_label_formatter(&tick)
            .draw()?;

        let mut keys = vec![
            key("throughput per second (left axis)", C_BLUE, Swatch::Line),
            key("p99 per second (right axis)", C_ORANGE, Swatch::Line),
        ];
        let instants = run.instants;
        keys.extend(shade(
            &mut chart,
            instants,
            frame.measured.end_ns,
            &at,
            &xr,
            &yr,
        )?);
        if let Some(c) = control {
            chart.draw_series(DashedLineSeries::new(
                vec![(xr.start, c), (xr.end, c)],
                10,
                6,
                C_GREY.stroke_width(2),
            ))?;
            keys.push(key(
                format!("control throughput: {} 1/s", num(c)),
                C_GREY,
                Swatch::Dashed,
            ));
        }
        chart.draw_secondary_series(DashedLineSeries::new(
            vec![(xr.start, bound), (xr.end, bound)],
            10,
            6,
            C_INK.stroke_width(2),
        ))?;
        keys.push(key(
            format!("objective: p99 ≤ {} ms (right axis)", num(bound)),
            C_INK,
            Swatch::Dashed,
        ));
        chart.draw_series(LineSeries::new(thr.iter().copied(), C_BLUE.stroke_width(2)))?;
        for seg in &p99 {
            if seg.len() == 1 {
                chart.draw_secondary_series(
                    seg.iter().map(|&p| Circle::new(p, 3, C_ORANGE.filled())),
                )?;
            } else {
                chart.draw_secondary_series(LineSeries::new(
                    seg.iter().copied(),
                    C_ORANGE.stroke_width(2),
                ))?;
            }
        }

        let px = |x: f64| chart.backend_coord(&(x, yr.start)).0;
        let (more, marks) = detections_and_recoveries(rows, instants, &at, &px);
        keys.extend(more);
        draw_marks(root, &chart.plotting_area().get_pixel_range(), &marks)?;
        draw_legend(&legend, &keys)
    })?;
    Ok(Plot { id, title, svg })
}

/// The fault shaded from its application to its clearing (or the measured phase's end), and
/// its observe window after; the legend's keys for them.
fn shade<DB: DrawingBackend, S>(
    chart: &mut ChartContext<'_, DB, S>,
    instants: Option<Instants>,
    measured_end: i128,
    at: &dyn Fn(i128) -> f64,
    xr: &Range<f64>,
    yr: &Range<f64>,
) -> Result<Vec<Key>, Failure>
where
    S: CoordTranslate<From = (f64, f64)>,
    DB::ErrorType: 'static,
{
    let clamp = |x: f64| x.clamp(xr.start, xr.end);
    let Some(i) = instants else {
        return Ok(vec![key(
            "fault never applied (no fault-applied event)",
            C_INK,
            Swatch::Bare,
        )]);
    };
    let mut keys = Vec::new();
    let (fault_end, fault_label) = match i.cleared {
        Some(c) => (c, "fault: applied → cleared".to_string()),
        None => (measured_end, "fault: applied, never cleared".into()),
    };
    let fault_shade = C_RED.mix(0.14);
    chart.draw_series(std::iter::once(Rectangle::new(
        [
            (clamp(at(i.applied)), yr.start),
            (clamp(at(fault_end)), yr.end),
        ],
        fault_shade.filled(),
    )))?;
    keys.push(key(fault_label, fault_shade, Swatch::Block));
    if let Some(c) = i.cleared {
        let observe_shade = C_OLIVE.mix(0.12);
        chart.draw_series(std::iter::once(Rectangle::new(
            [(clamp(at(c)), yr.start), (clamp(at(i.observe_end)), yr.end)],
            observe_shade.filled(),
        )))?;
        keys.push(key("observe window", observe_shade, Swatch::Block));
    }
    Ok(keys)
}

/// When the fault was detected (each way) and when the service recovered (from the
/// clearing and from the replica's restart), as legend keys and marks at their instants
/// (`px`: a time's pixel); a figure with no value says why in its key.
fn detections_and_recoveries(
    rows: &[Row],
    instants: Option<Instants>,
    at: &dyn Fn(i128) -> f64,
    px: &dyn Fn(f64) -> i32,
) -> (Vec<Key>, Vec<Mark>) {
    let value = |definition: &str, metric: &str| find(rows, None, "", definition, metric);
    let (mut keys, mut marks) = (Vec::new(), Vec::new());
    let applied = instants.map(|i| at(i.applied));
    for (metric, what, color) in [
        ("detect_balancer_down", "balancer down", C_PURPLE),
        ("detect_failed_request", "failed request", C_BROWN),
        ("detect_objective_window", "objective window", C_PINK),
    ] {
        let figure = Figure {
            row: value("", metric),
            origin: applied,
            color,
        };
        figure.mark(
            &mut keys,
            &mut marks,
            |v| format!("detected, {what}: +{} s", num(v)),
            format!("detected: {what}"),
            |why| format!("detected, {what}: {why}"),
            px,
        );
    }
    let restart = instants.and_then(|i| i.restart).map(at);
    if let Some(r) = restart {
        keys.push(key("replica back in service", C_GOLD, Swatch::Dashed));
        marks.push(Mark {
            px: px(r),
            short: "replica back".into(),
            color: C_GOLD,
        });
    }
    for (definition, origin, color) in [
        ("clear", instants.and_then(|i| i.cleared).map(at), C_GREEN),
        ("restart", restart, C_CYAN),
    ] {
        let figure = Figure {
            row: value(definition, "time_to_recover"),
            origin,
            color,
        };
        figure.mark(
            &mut keys,
            &mut marks,
            // Signed: a service back before the replica recovered before its restart.
            |v| {
                let sign = if v < 0.0 { '−' } else { '+' };
                format!("recovered: {definition} {sign} {} s", num(v.abs()))
            },
            format!("recovered ({definition})"),
            |why| format!("recovered ({definition}): {why}"),
            px,
        );
    }
    (keys, marks)
}

/// A figure timed from an instant (a detection from the fault's application, a recovery
/// from its clearing or the restart): its row, that instant, its colour.
struct Figure<'a> {
    row: Option<&'a Row>,
    origin: Option<f64>,
    color: RGBColor,
}

impl Figure<'_> {
    /// With a value and its instant: a key `found(value)` and a mark `short` at the instant
    /// plus the value; otherwise a key `missing(why)` saying why there is none.
    fn mark(
        &self,
        keys: &mut Vec<Key>,
        marks: &mut Vec<Mark>,
        found: impl Fn(f64) -> String,
        short: String,
        missing: impl Fn(String) -> String,
        px: &dyn Fn(f64) -> i32,
    ) {
        match (self.row.and_then(|r| r.value), self.origin) {
            (Some(v), Some(o)) => {
                keys.push(key(found(v), self.color, Swatch::Dashed));
                marks.push(Mark {
                    px: px(o + v),
                    short,
                    color: self.color,
                });
            }
            _ => keys.push(key(
                missing(why_empty(self.row)),
                self.color,
                Swatch::Dashed,
            )),
        }
    }
}
