//! Charts of bench results, as SVG beside the JSON (`cargo xtask bench` draws them after writing
//! its JSON; `cargo xtask plot <json>...` draws them from existing files, older formats too).
//!
//! For each dtype of the file (`<stem>` is the JSON's name without `.json`; `-<dtype>` is added
//! after it when the file holds several dtypes):
//! - `<stem>.svg`: effective TFLOP/s of plain SpMM (`op` "spmm", uniform mask, batch 1) against
//!   block density, one panel per block size, with the dense cuBLAS level of the same shape and
//!   PyTorch's BSR kernel (default and tuned parameters) where the file has them. With a single
//!   density: grouped bars per block size (ours, PyTorch default, PyTorch tuned, dense cuBLAS);
//! - `<stem>-masks.svg`, when masks other than uniform were timed: TFLOP/s per mask pattern
//!   (and density) for each block size, with the dense cuBLAS level;
//! - `<stem>-ops.svg`, when the other ops were timed (`--ops`, `--batched`): each op's
//!   effective TFLOP/s over dense cuBLAS's (`ratio_to_dense`) for each block size.
//!
//! Each chart is titled with the GPU, the date of the run (UTC), the dtype and the commit.
//! Only plotters' SVG backend is used: text is left to the SVG viewer's fonts, so the binary
//! needs no font or image libraries.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::bench::{Report, Row};

type Res<T> = Result<T, String>;
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

#[derive(clap::Args)]
pub struct Args {
    /// Bench JSON files (`cargo xtask bench --json`); each one's charts are written beside it.
    #[arg(required = true)]
    json: Vec<PathBuf>,
}

/// `cargo xtask plot`: reads each file and draws its charts.
pub fn run(args: Args) -> Res<bool> {
    for path in &args.json {
        let text = std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
        let report: Report = serde_json::from_str(&text).map_err(|e| format!("{}: not a bench JSON: {e}", path.display()))?;
        let written = render(&report, path)?;
        if written.is_empty() {
            println!("{}: no rows to plot", path.display());
        }
        for svg in written {
            println!("plot: {}", svg.display());
        }
    }
    Ok(true)
}

/// Draws the charts of `report` beside `json` (see the module docs) and returns their paths.
pub fn render(report: &Report, json: &Path) -> Res<Vec<PathBuf>> {
    let mut dtypes: Vec<&str> = Vec::new();
    for r in &report.rows {
        if !dtypes.contains(&r.dtype.as_str()) {
            dtypes.push(&r.dtype);
        }
    }
    let mut written = Vec::new();
    for &dt in &dtypes {
        let rows: Vec<&Row> = report.rows.iter().filter(|r| r.dtype == dt).collect();
        let tag = if dtypes.len() > 1 { format!("-{dt}") } else { String::new() };
        let header = header(report, dt);
        let plain: Vec<&Row> = rows.iter().copied().filter(|r| r.op == "spmm" && r.batch == 1).collect();
        let uniform: Vec<&Row> = plain.iter().copied().filter(|r| r.pattern == "uniform").collect();
        if !uniform.is_empty() {
            let path = svg_path(json, &tag);
            density_chart(&path, &header, &uniform)?;
            written.push(path);
        }
        // The masks at the densities where masks other than uniform were timed.
        let masked: Vec<&Row> =
            plain.iter().copied().filter(|r| plain.iter().any(|o| o.pattern != "uniform" && o.density == r.density)).collect();
        if !masked.is_empty() {
            let path = svg_path(json, &format!("{tag}-masks"));
            masks_chart(&path, &header, &masked)?;
            written.push(path);
        }
        let ops: Vec<&Row> = rows.iter().copied().filter(|r| r.op != "spmm" && !r.op.starts_with("spmm G")).collect();
        if !ops.is_empty() {
            let path = svg_path(json, &format!("{tag}-ops"));
            ops_chart(&path, &header, &ops)?;
            written.push(path);
        }
    }
    Ok(written)
}

/// `<dir>/<stem><suffix>.svg` for `<dir>/<stem>.json`.
fn svg_path(json: &Path, suffix: &str) -> PathBuf {
    let stem = json.file_stem().map_or_else(|| "bench".to_string(), |s| s.to_string_lossy().into_owned());
    json.with_file_name(format!("{stem}{suffix}.svg"))
}

/// "GPU · date · dtype · commit" (what is known of it).
fn header(report: &Report, dtype: &str) -> String {
    let mut parts = vec![if report.gpu.is_empty() { "unknown GPU".to_string() } else { report.gpu.clone() }];
    if report.unix_time > 0 {
        parts.push(utc_date(report.unix_time));
    }
    parts.push(dtype.to_string());
    if !report.commit.is_empty() && report.commit != "unknown" {
        let (hash, dirty) = match report.commit.strip_suffix("-dirty") {
            Some(h) => (h, "-dirty"),
            None => (report.commit.as_str(), ""),
        };
        parts.push(format!("commit {}{dirty}", &hash[..hash.len().min(10)]));
    }
    parts.join(" · ")
}

/// "YYYY-MM-DD HH:MM UTC" of a Unix time (days to civil date: H. Hinnant's algorithm).
fn utc_date(unix: u64) -> String {
    let secs = unix as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

fn de<E: std::fmt::Display>(e: E) -> String {
    format!("plot: {e}")
}

/// A measured value, or `None` for one that is missing or not a number.
fn finite(v: f64) -> Option<f64> {
    (v.is_finite() && v > 0.0).then_some(v)
}

/// A density as the bench was given it: 0.125, 0.03125.
fn dens(d: f64) -> String {
    format!("{d}")
}

fn shape(r: &Row) -> String {
    if r.batch > 1 { format!("{}×{}×{}×{}", r.batch, r.m, r.n, r.k) } else { format!("M×N×K {}×{}×{}", r.m, r.n, r.k) }
}

const OURS: RGBColor = RGBColor(31, 119, 180);
const TORCH: RGBColor = RGBColor(255, 127, 14);
const TORCH_TUNED: RGBColor = RGBColor(214, 39, 40);
const DENSE: RGBColor = RGBColor(110, 110, 110);
/// Colors of block sizes in the masks and ops charts.
const PALETTE: [RGBColor; 5] =
    [RGBColor(31, 119, 180), RGBColor(44, 160, 44), RGBColor(148, 103, 189), RGBColor(140, 86, 75), RGBColor(23, 190, 207)];

fn sorted_unique<T: PartialOrd + Copy>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = Vec::new();
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v
}

/// The mean of the values present.
fn mean(it: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = it.flatten().collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// An SVG of `size` at `path`, white, titled `header`: the title and the area below it.
fn titled<'a>(path: &'a Path, size: (u32, u32), header: &str) -> Res<(Area<'a>, Area<'a>)> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(de)?;
    let body = root.titled(header, ("sans-serif", 24)).map_err(de)?;
    Ok((root, body))
}

/// One series of a bar chart: a value (or none) per category.
struct Series {
    name: String,
    color: RGBColor,
    values: Vec<Option<f64>>,
}

/// A grouped bar chart: per category, one bar per series, the value written above it.
struct Bars {
    caption: String,
    /// Each category's label, one string per line.
    categories: Vec<Vec<String>>,
    series: Vec<Series>,
    x_desc: String,
    y_desc: String,
    /// A dashed horizontal line: (legend, value).
    reference: Option<(String, f64)>,
    /// How a bar's value (and the y axis) is written.
    fmt: fn(f64) -> String,
}

fn draw_bars(area: &Area<'_>, b: &Bars) -> Res<()> {
    let series: Vec<&Series> = b.series.iter().filter(|s| s.values.iter().any(Option::is_some)).collect();
    let n = b.categories.len().max(1) as f64;
    let top =
        series.iter().flat_map(|s| s.values.iter().flatten()).copied().chain(b.reference.as_ref().map(|r| r.1)).fold(0.0f64, f64::max);
    let entries = series.len() + usize::from(b.reference.is_some());
    // Room above the tallest bar for its value and for the legend (upper right).
    let ymax = if top > 0.0 { top * (1.12 + 0.07 * entries as f64) } else { 1.0 };
    let lines = b.categories.iter().map(Vec::len).max().unwrap_or(1) as u32;
    let mut chart = ChartBuilder::on(area)
        .caption(&b.caption, ("sans-serif", 19))
        .margin(14)
        .x_label_area_size(34 + 17 * lines)
        .y_label_area_size(72)
        .build_cartesian_2d(-0.5f64..n - 0.5, 0f64..ymax)
        .map_err(de)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(10)
        .y_label_formatter(&|v| (b.fmt)(*v))
        .x_desc(b.x_desc.as_str())
        .y_desc(b.y_desc.as_str())
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(de)?;
    let w = 0.84 / series.len().max(1) as f64;
    let value_style = TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    for (si, s) in series.iter().enumerate() {
        let x0 = |ci: usize| ci as f64 - 0.42 + si as f64 * w;
        let color = s.color;
        chart
            .draw_series(
                s.values
                    .iter()
                    .enumerate()
                    .filter_map(|(ci, v)| v.map(|v| Rectangle::new([(x0(ci) + 0.06 * w, 0.0), (x0(ci) + 0.94 * w, v)], color.filled()))),
            )
            .map_err(de)?
            .label(s.name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
        chart
            .draw_series(
                s.values
                    .iter()
                    .enumerate()
                    .filter_map(|(ci, v)| v.map(|v| Text::new((b.fmt)(v), (x0(ci) + 0.5 * w, v), value_style.clone()))),
            )
            .map_err(de)?;
    }
    if let Some((name, v)) = &b.reference {
        chart
            .draw_series(DashedLineSeries::new(vec![(-0.5, *v), (n - 0.5, *v)], 8, 5, BLACK.stroke_width(2)))
            .map_err(de)?
            .label(name.as_str())
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], BLACK.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(de)?;
    // The category labels, centred under each group (the x axis is numeric underneath).
    let (bx, by) = area.get_base_pixel();
    let label_style = TextStyle::from(("sans-serif", 15).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (ci, lines) in b.categories.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(ci as f64, 0.0));
        for (li, line) in lines.iter().enumerate() {
            area.draw(&Text::new(line.as_str(), (px - bx, py - by + 8 + 17 * li as i32), label_style.clone())).map_err(de)?;
        }
    }
    Ok(())
}

/// The marker of a series in the density panels.
#[derive(Clone, Copy)]
enum Marker {
    Circle,
    Triangle,
    Cross,
}

/// Plain SpMM against density: panels of lines, or grouped bars for a single density.
fn density_chart(path: &Path, header: &str, rows: &[&Row]) -> Res<()> {
    let blocks = sorted_unique(rows.iter().map(|r| r.block));
    let densities = sorted_unique(rows.iter().map(|r| r.density));
    let shape = shape(rows[0]);
    if densities.len() == 1 {
        let pick = |f: &dyn Fn(&Row) -> Option<f64>| -> Vec<Option<f64>> {
            blocks.iter().map(|&b| rows.iter().find(|r| r.block == b).and_then(|r| f(r))).collect()
        };
        let bars = Bars {
            caption: format!("SpMM C = A·B, {shape}, uniform mask, block density {}", dens(densities[0])),
            categories: blocks.iter().map(|b| vec![format!("block {b}×{b}")]).collect(),
            series: vec![
                Series { name: "blocksparse (ours)".into(), color: OURS, values: pick(&|r| finite(r.tflops)) },
                Series { name: "PyTorch BSR, default".into(), color: TORCH, values: pick(&|r| r.peer_tflops.and_then(finite)) },
                Series { name: "PyTorch BSR, tuned".into(), color: TORCH_TUNED, values: pick(&|r| r.peer_tuned_tflops.and_then(finite)) },
                Series { name: "dense cuBLAS (all M×N×K flops)".into(), color: DENSE, values: pick(&|r| finite(r.dense_tflops)) },
            ],
            x_desc: "block size".into(),
            y_desc: "effective TFLOP/s (nonzero blocks' flops / time)".into(),
            reference: None,
            fmt: |v| format!("{v:.0}"),
        };
        let (root, body) = titled(path, ((260 * blocks.len() as u32 + 260).max(960), 620), header)?;
        draw_bars(&body, &bars)?;
        return root.present().map_err(de);
    }
    let ymax = rows
        .iter()
        .flat_map(|r| [finite(r.tflops), r.peer_tflops.and_then(finite), r.peer_tuned_tflops.and_then(finite), finite(r.dense_tflops)])
        .flatten()
        .fold(0.0f64, f64::max);
    let ymax = if ymax > 0.0 { ymax * 1.4 } else { 1.0 };
    let (lo, hi) = (densities[0] / 1.5, densities[densities.len() - 1] * 1.5);
    let (root, body) = titled(path, ((470 * blocks.len() as u32 + 40).max(960), 640), header)?;
    let body = body.margin(0, 0, 0, 0);
    let caption = format!("SpMM C = A·B, {shape}, uniform mask: effective TFLOP/s against block density");
    let (cap, panels_area) = body.split_vertically(34);
    cap.draw(&Text::new(
        caption,
        (cap.dim_in_pixel().0 as i32 / 2, 6),
        TextStyle::from(("sans-serif", 19).into_font()).pos(Pos::new(HPos::Center, VPos::Top)),
    ))
    .map_err(de)?;
    let panels = panels_area.split_evenly((1, blocks.len()));
    for (pi, (panel, &bs)) in panels.iter().zip(&blocks).enumerate() {
        let mut rs: Vec<&Row> = rows.iter().copied().filter(|r| r.block == bs).collect();
        rs.sort_by(|a, b| a.density.total_cmp(&b.density));
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("block {bs}×{bs}"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(if pi == 0 { 72 } else { 48 })
            .build_cartesian_2d((lo..hi).log_scale().with_key_points(densities.clone()), 0f64..ymax)
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|d| dens(*d))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .x_desc("block density (log scale)")
            .y_desc(if pi == 0 { "effective TFLOP/s (nonzero blocks' flops / time)" } else { "effective TFLOP/s" })
            .axis_desc_style(("sans-serif", 15))
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(de)?;
        // Each series: a line (where it has two points or more), a marker and the value at
        // each point.
        let value_style = TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Left, VPos::Bottom));
        let mut line = |name: &str, color: RGBColor, pts: Vec<(f64, f64)>, marker: Marker| -> Res<()> {
            if pts.is_empty() {
                return Ok(());
            }
            let style = color.stroke_width(2);
            let series = match marker {
                Marker::Circle => chart.draw_series(pts.iter().map(|&p| Circle::new(p, 5, color.filled()))).map_err(de)?,
                Marker::Triangle => chart.draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 6, color.filled()))).map_err(de)?,
                Marker::Cross => chart.draw_series(pts.iter().map(|&p| Cross::new(p, 6, color.stroke_width(2)))).map_err(de)?,
            };
            let series = series.label(name);
            let line = move |x: i32, y: i32| EmptyElement::at((x + 10, y)) + PathElement::new(vec![(-10, 0), (10, 0)], style);
            match marker {
                Marker::Circle => series.legend(move |(x, y)| line(x, y) + Circle::new((0, 0), 4, color.filled())),
                Marker::Triangle => series.legend(move |(x, y)| line(x, y) + TriangleMarker::new((0, 0), 5, color.filled())),
                Marker::Cross => series.legend(move |(x, y)| line(x, y) + Cross::new((0, 0), 5, style)),
            };
            if pts.len() > 1 {
                chart.draw_series(LineSeries::new(pts.clone(), style)).map_err(de)?;
            }
            chart.draw_series(pts.iter().map(|&(d, v)| Text::new(format!(" {v:.0}"), (d, v), value_style.clone()))).map_err(de)?;
            Ok(())
        };
        line("blocksparse (ours)", OURS, rs.iter().filter_map(|r| finite(r.tflops).map(|t| (r.density, t))).collect(), Marker::Circle)?;
        let torch = rs.iter().filter_map(|r| r.peer_tflops.and_then(finite).map(|t| (r.density, t))).collect();
        line("PyTorch BSR, default", TORCH, torch, Marker::Triangle)?;
        let tuned = rs.iter().filter_map(|r| r.peer_tuned_tflops.and_then(finite).map(|t| (r.density, t))).collect();
        line("PyTorch BSR, tuned", TORCH_TUNED, tuned, Marker::Cross)?;
        if let Some(dense) = mean(rs.iter().map(|r| finite(r.dense_tflops))) {
            chart
                .draw_series(DashedLineSeries::new(vec![(lo, dense), (hi, dense)], 8, 5, DENSE.stroke_width(2)))
                .map_err(de)?
                .label(format!("dense cuBLAS, {dense:.0} TFLOP/s"))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], DENSE.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(de)?;
    }
    root.present().map_err(de)
}

/// A bar-chart category: its name, and its density where the name has several.
type Category = (String, Option<f64>);

/// The categories of rows keyed by `name`, and by density too where a name has several rows
/// for one block size (a sweep); a name with one row per block size (a mask family, whose
/// density depends on the block size) is one category, labelled with its densities. In order
/// of first appearance, with each category's label lines.
fn categories(rows: &[&Row], name: impl Fn(&Row) -> String, wrap: usize) -> (Vec<Category>, Vec<Vec<String>>) {
    let per_block_unique = |n: &str| {
        let blocks: Vec<usize> = rows.iter().filter(|r| name(r) == n).map(|r| r.block).collect();
        blocks.iter().enumerate().all(|(i, b)| !blocks[..i].contains(b))
    };
    let mut keys: Vec<Category> = Vec::new();
    for r in rows {
        let n = name(r);
        let k = if per_block_unique(&n) { (n, None) } else { (n, Some(r.density)) };
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let several = sorted_unique(rows.iter().map(|r| r.density)).len() > 1;
    let labels = keys
        .iter()
        .map(|(n, d)| {
            let mut lines = wrap_label(n, wrap);
            if several {
                let ds = match d {
                    Some(d) => vec![*d],
                    None => sorted_unique(rows.iter().filter(|r| name(r) == *n).map(|r| r.density)),
                };
                match ds.as_slice() {
                    [one] => lines.push(format!("d = {}", dens(*one))),
                    [lo, .., hi] => lines.push(format!("d = {:.3}–{:.3}", lo, hi)),
                    [] => {}
                }
            }
            lines
        })
        .collect();
    (keys, labels)
}

/// `label`'s first word on a line, then the others wrapped at `width` characters.
fn wrap_label(label: &str, width: usize) -> Vec<String> {
    let mut words = label.split_whitespace();
    let mut lines: Vec<String> = words.next().map(str::to_string).into_iter().collect();
    let mut cur = String::new();
    for w in words {
        if !cur.is_empty() && cur.len() + 1 + w.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// One series per block size of `value` over the categories `keys` (named by `name`).
fn block_series(rows: &[&Row], keys: &[Category], name: impl Fn(&Row) -> String, value: impl Fn(&Row) -> Option<f64>) -> Vec<Series> {
    sorted_unique(rows.iter().map(|r| r.block))
        .iter()
        .enumerate()
        .map(|(i, &bs)| Series {
            name: format!("block {bs}×{bs}"),
            color: PALETTE[i % PALETTE.len()],
            values: keys
                .iter()
                .map(|(k, d)| {
                    rows.iter().find(|r| r.block == bs && d.is_none_or(|d| r.density == d) && name(r) == *k).and_then(|r| value(r))
                })
                .collect(),
        })
        .collect()
}

/// Plain SpMM per mask pattern.
fn masks_chart(path: &Path, header: &str, rows: &[&Row]) -> Res<()> {
    let pattern = |r: &Row| r.pattern.clone();
    let (keys, labels) = categories(rows, pattern, 12);
    let series = block_series(rows, &keys, pattern, |r| finite(r.tflops));
    let dense = mean(rows.iter().map(|r| finite(r.dense_tflops)));
    let width = (keys.len() as u32 * (series.len() as u32 * 55 + 50) + 220).max(900);
    let bars = Bars {
        caption: format!("SpMM C = A·B, {}, per mask pattern", shape(rows[0])),
        categories: labels,
        series,
        x_desc: "mask pattern (block density d: per block size, 16 … 128, where it differs)".into(),
        y_desc: "effective TFLOP/s (nonzero blocks' flops / time)".into(),
        reference: dense.map(|d| (format!("dense cuBLAS, {d:.0} TFLOP/s"), d)),
        fmt: |v| format!("{v:.0}"),
    };
    let (root, body) = titled(path, (width, 620), header)?;
    draw_bars(&body, &bars)?;
    root.present().map_err(de)
}

/// Every op's effective TFLOP/s over dense cuBLAS's.
fn ops_chart(path: &Path, header: &str, rows: &[&Row]) -> Res<()> {
    let op = |r: &Row| r.op.clone();
    let (keys, labels) = categories(rows, op, 9);
    let series = block_series(rows, &keys, op, |r| finite(r.ratio_to_dense));
    let width = (keys.len() as u32 * (series.len() as u32 * 26 + 26) + 220).max(1000);
    let densities = sorted_unique(rows.iter().map(|r| r.density));
    let density = if densities.len() == 1 { format!(", block density {}", dens(densities[0])) } else { String::new() };
    let bars = Bars {
        caption: format!("Every op and layout, uniform mask{density}: effective TFLOP/s over dense cuBLAS TFLOP/s (same shape, same run)"),
        categories: labels,
        series,
        x_desc: "op (A/B/C/X/Y: N or T = op, R or C = row- or column-major; batched: 16×2048³)".into(),
        y_desc: "effective TFLOP/s / dense cuBLAS TFLOP/s".into(),
        reference: Some(("dense cuBLAS efficiency (1.0)".into(), 1.0)),
        fmt: |v| format!("{v:.2}"),
    };
    let (root, body) = titled(path, (width, 680), header)?;
    draw_bars(&body, &bars)?;
    root.present().map_err(de)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_date(1_700_000_000), "2023-11-14 22:13 UTC");
    }

    #[test]
    fn labels() {
        assert_eq!(wrap_label("spmm AT BR CR", 9), ["spmm", "AT BR CR"]);
        assert_eq!(wrap_label("sddmm batched XR YC", 9), ["sddmm", "batched", "XR YC"]);
        assert_eq!(wrap_label("uniform", 12), ["uniform"]);
    }

    #[test]
    fn old_and_new_rows_plot() {
        // The old format (bsr_tflops, no op, no batch) and the new one, two densities and a mask.
        let json = r#"{"gpu": "Test GPU", "unix_time": 1700000000, "reps": 5, "rows": [
            {"dtype": "f16", "m": 256, "n": 256, "k": 256, "block": 64, "pattern": "uniform", "density": 0.5,
             "bsr_tflops": 10.0, "dense_tflops": 30.0, "peer_tflops": 5.0},
            {"op": "spmm", "dtype": "f16", "m": 256, "n": 256, "k": 256, "batch": 1, "block": 64, "pattern": "uniform",
             "density": 0.25, "tflops": 8.0, "dense_tflops": 30.0, "peer_tflops": null},
            {"op": "spmm", "dtype": "f16", "m": 256, "n": 256, "k": 256, "batch": 1, "block": 64, "pattern": "banded",
             "density": 0.25, "tflops": 9.0, "dense_tflops": 30.0},
            {"op": "sddmm XR YC", "dtype": "f16", "m": 256, "n": 256, "k": 256, "batch": 1, "block": 64, "pattern": "uniform",
             "density": 0.25, "tflops": 9.0, "dense_tflops": 30.0, "ratio_to_dense": 0.3}]}"#;
        let report: Report = serde_json::from_str(json).expect("tolerant reader");
        assert_eq!(report.rows[0].op, "spmm");
        assert_eq!(report.rows[0].batch, 1);
        assert_eq!(report.rows[0].tflops, 10.0);
        let dir = std::env::temp_dir().join(format!("xtask-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let written = render(&report, &dir.join("b.json")).expect("render");
        let names: Vec<String> = written.iter().map(|p| p.file_name().unwrap_or_default().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["b.svg", "b-masks.svg", "b-ops.svg"]);
        let main = std::fs::read_to_string(&written[0]).expect("svg");
        for text in ["Test GPU", "2023-11-14", "f16", "blocksparse (ours)", "PyTorch BSR, default", "dense cuBLAS", "block density"] {
            assert!(main.contains(text), "{text} missing from the density chart");
        }
        let masks = std::fs::read_to_string(&written[1]).expect("svg");
        assert!(masks.contains("banded") && masks.contains("uniform"));
        let ops = std::fs::read_to_string(&written[2]).expect("svg");
        assert!(ops.contains("sddmm") && ops.contains("0.30"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
