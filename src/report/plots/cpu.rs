//! A run's CPU plot (`cpu-<run>`): each container role's CPU as a share of its cap over time.

use super::*;

pub(super) fn cpu(run: &RunFigures, id: String) -> Result<Plot, PlotError> {
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
