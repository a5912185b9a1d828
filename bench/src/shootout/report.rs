//! Renders [`Results`]: a markdown summary of req/s, every server measured
//! against ringside, and SVG line charts per scenario and worker count.

use std::io;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::results::{Cell, Results};

/// The server the others are compared with.
const BASELINE: &str = "ringside";

/// The markdown report: one req/s table per scenario, then the skipped
/// servers.
pub fn markdown(r: &Results) -> String {
    let servers = shown_servers(r);
    let mut out = vec![
        format!("## Shootout: {}", r.name),
        String::new(),
        format!(
            "{}; {} UTC; {} s per run; medians of {} interleaved repeats; spread is min–max.",
            r.machine, r.date, r.duration_s, r.repeats
        ),
        String::new(),
        format!(
            "Requests/s. {BASELINE}: median (spread); others: median as a multiple of \
             {BASELINE}'s (their median)."
        ),
    ];
    for scenario in &r.scenarios {
        out.push(String::new());
        out.push(format!("### {scenario}"));
        out.push(String::new());
        let rows = rows(r, scenario);
        if rows.is_empty() {
            out.push("No results.".into());
            continue;
        }
        out.push(format!("| workers | c | {} |", servers.join(" | ")));
        out.push(format!("|---:|---:|{}", "---:|".repeat(servers.len())));
        for (workers, concurrency) in rows {
            let base = r
                .cell(scenario, BASELINE, workers, concurrency)
                .and_then(Cell::median_rps)
                // A ratio to zero says nothing.
                .filter(|rps| *rps > 0.0);
            let cells: Vec<String> = servers
                .iter()
                .map(|server| {
                    let cell = r.cell(scenario, server, workers, concurrency);
                    cell_text(cell, *server == BASELINE, base)
                })
                .collect();
            out.push(format!(
                "| {workers} | {concurrency} | {} |",
                cells.join(" | ")
            ));
        }
    }
    if !r.skipped.is_empty() {
        out.push(String::new());
        for s in &r.skipped {
            out.push(format!("- {} skipped: {}", s.server, s.reason));
        }
    }
    out.push(String::new());
    out.join("\n")
}

/// Writes `{scenario}-w{workers}-rps.svg` and `{scenario}-w{workers}-latency.svg`
/// for every scenario and worker count into `dir`, and returns their paths.
pub fn write_charts(r: &Results, dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let servers = shown_servers(r);
    let mut written = Vec::new();
    for scenario in &r.scenarios {
        let rows = rows(r, scenario);
        let mut worker_counts: Vec<usize> = rows.iter().map(|(w, _)| *w).collect();
        worker_counts.dedup();
        for workers in worker_counts {
            let concurrencies: Vec<usize> = rows
                .iter()
                .filter(|(w, _)| *w == workers)
                .map(|(_, c)| *c)
                .collect();
            // Medians of one server at each concurrency that has them.
            let series = |server: &str, f: fn(&Cell) -> Option<f64>| -> Vec<(f64, f64)> {
                concurrencies
                    .iter()
                    .filter_map(|&c| Some((c as f64, f(r.cell(scenario, server, workers, c)?)?)))
                    .collect()
            };
            let plural = if workers == 1 { "" } else { "s" };
            let title = format!("{scenario}, {workers} worker{plural}");
            let mut rps = Chart::new(
                format!("{title}: requests/s"),
                "requests/s",
                false,
                &concurrencies,
            );
            let mut latency = Chart::new(
                format!("{title}: latency (p50 solid, p99 dashed)"),
                "latency (ms)",
                true,
                &concurrencies,
            );
            for server in &servers {
                let color = color(r, server);
                rps.push(
                    server.to_string(),
                    color,
                    false,
                    series(server, Cell::median_rps),
                );
                let p50 = series(server, Cell::median_p50_ms);
                latency.push(format!("{server} p50"), color, false, p50);
                let p99 = series(server, Cell::median_p99_ms);
                latency.push(format!("{server} p99"), color, true, p99);
            }

            let stem = format!("{}-w{workers}", file_stem(scenario));
            for (chart, kind) in [(rps, "rps"), (latency, "latency")] {
                let path = dir.join(format!("{stem}-{kind}.svg"));
                std::fs::write(&path, chart.render()?)?;
                written.push(path);
            }
        }
    }
    Ok(written)
}

/// The servers that ran, in the definition's order: a skipped one would
/// only add a column, or a series, of nothing.
fn shown_servers(r: &Results) -> Vec<&str> {
    r.servers
        .iter()
        .filter(|s| !r.skipped.iter().any(|k| &k.server == *s))
        .map(String::as_str)
        .collect()
}

/// The (workers, concurrency) pairs measured in `scenario`, sorted.
fn rows(r: &Results, scenario: &str) -> Vec<(usize, usize)> {
    let mut rows: Vec<(usize, usize)> = r
        .cells
        .iter()
        .filter(|c| c.scenario == scenario)
        .map(|c| (c.workers, c.concurrency))
        .collect();
    rows.sort_unstable();
    rows.dedup();
    rows
}

fn cell_text(cell: Option<&Cell>, is_base: bool, base: Option<f64>) -> String {
    let Some(cell) = cell else {
        return "—".into();
    };
    let Some(rps) = cell.median_rps() else {
        return if cell.errors.is_empty() {
            "—"
        } else {
            "error"
        }
        .into();
    };
    let mut text = match (is_base, cell.spread_rps(), base) {
        // One repeat has no spread worth printing.
        (true, Some((lo, hi)), _) if cell.samples.len() > 1 => {
            format!("{} ({}–{})", thousands(rps), thousands(lo), thousands(hi))
        }
        (false, _, Some(base)) => format!("{:.2}× ({})", rps / base, thousands(rps)),
        _ => thousands(rps),
    };
    let failed = cell.failed();
    if failed > 0 {
        text.push_str(&format!(" ⚠ {} failed", thousands(failed as f64)));
    }
    // The figures are then from fewer repeats than the header says.
    if !cell.errors.is_empty() {
        let tried = cell.samples.len() + cell.errors.len();
        text.push_str(&format!(
            " ⚠ {} of {tried} repeats errored",
            cell.errors.len()
        ));
    }
    text
}

/// `x` rounded, with a comma every three digits: 24,953.
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return format!("{x}");
    }
    let mut out = String::new();
    if x.round() < 0.0 {
        out.push('-');
    }
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Two significant digits below 10 (latencies run to fractions of a ms),
/// whole numbers above.
fn axis_number(v: f64) -> String {
    if v.abs() >= 10.0 || v == 0.0 {
        return thousands(v);
    }
    let scale = 10f64.powi(1 - v.abs().log10().floor() as i32);
    format!("{}", (v * scale).round() / scale)
}

/// Keeps `[A-Za-z0-9._-]`; each run of anything else (a space, a slash,
/// " (h2, " of a protocol) becomes one '-', none at the end, so that
/// "static 26 B (h2, 10 streams)" is `static-26-B-h2-10-streams`.
fn file_stem(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// A server keeps its color in every chart: ringside, listed first, gets the
/// first.
fn color(r: &Results, server: &str) -> RGBColor {
    const PALETTE: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    let i = r.servers.iter().position(|s| s == server).unwrap_or(0);
    PALETTE[i % PALETTE.len()]
}

struct Line {
    label: String,
    color: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

/// A line chart against concurrency, on a log axis since concurrencies
/// run 1, 10, 100, 500.
struct Chart {
    title: String,
    y_label: &'static str,
    /// Latencies span decades from c=1 to c=500; req/s reads best from zero.
    log_y: bool,
    /// Ticks go at the concurrencies measured, not at powers of ten.
    x: Vec<f64>,
    lines: Vec<Line>,
}

impl Chart {
    fn new(title: String, y_label: &'static str, log_y: bool, concurrencies: &[usize]) -> Self {
        Chart {
            title,
            y_label,
            log_y,
            x: concurrencies.iter().map(|&c| c as f64).collect(),
            lines: Vec::new(),
        }
    }

    fn push(&mut self, label: String, color: RGBColor, dashed: bool, mut points: Vec<(f64, f64)>) {
        // A zero latency has no place on a log axis.
        points.retain(|&(_, y)| y.is_finite() && (y > 0.0 || !self.log_y));
        // A server with nothing here would only crowd the legend.
        if !points.is_empty() {
            self.lines.push(Line {
                label,
                color,
                dashed,
                points,
            });
        }
    }

    fn render(&self) -> io::Result<String> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (860, 520)).into_drawing_area();
            root.fill(&WHITE).map_err(io::Error::other)?;
            let lo = self.x.iter().copied().reduce(f64::min).unwrap_or(1.0);
            let hi = self.x.iter().copied().reduce(f64::max).unwrap_or(10.0);
            // Margins so the first and last markers sit clear of the edges.
            let x = (lo / 1.5..hi * 1.5)
                .log_scale()
                .with_key_points(self.x.clone());
            let ys = self
                .lines
                .iter()
                .flat_map(|l| &l.points)
                .map(|p| p.1)
                .filter(|y| *y > 0.0);
            let y_max = ys.clone().reduce(f64::max);
            if self.log_y {
                let y_min = ys.reduce(f64::min).unwrap_or(0.1);
                let y_max = y_max.unwrap_or(10.0);
                self.draw(&root, x, (y_min / 2.0..y_max * 2.0).log_scale())
            } else {
                self.draw(&root, x, 0.0..y_max.unwrap_or(1.0) * 1.1)
            }
            .map_err(io::Error::other)?;
            root.present().map_err(io::Error::other)?;
        }
        Ok(svg)
    }

    fn draw<X, Y>(
        &self,
        root: &DrawingArea<SVGBackend<'_>, Shift>,
        x: X,
        y: Y,
    ) -> Result<(), DrawingAreaErrorKind<io::Error>>
    where
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(45)
            .y_label_area_size(75)
            .build_cartesian_2d(x, y)?;
        chart
            .configure_mesh()
            .x_desc("concurrency (connections, log scale)")
            .y_desc(self.y_label)
            .x_label_formatter(&|v| thousands(*v))
            .y_label_formatter(&|v| axis_number(*v))
            .draw()?;
        for line in &self.lines {
            let style = line.color.stroke_width(2);
            let points = line.points.iter().copied();
            if line.dashed {
                chart
                    .draw_series(DashedLineSeries::new(points, 8, 5, style))?
                    .label(&line.label)
                    .legend(move |(x, y)| {
                        DashedPathElement::new(vec![(x, y), (x + 24, y)], 6, 4, style)
                    });
            } else {
                chart
                    .draw_series(LineSeries::new(points, style))?
                    .label(&line.label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
            }
            let marker = line.color.filled();
            chart.draw_series(line.points.iter().map(|&p| Circle::new(p, 3, marker)))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
    }
}

#[cfg(test)]
mod tests {
    use super::super::results::{Sample, Skipped};
    use super::*;

    const SERVERS: [&str; 3] = ["ringside", "nginx", "lighttpd"];

    fn cell(scenario: &str, server: &str, workers: usize, c: usize, rps: &[f64]) -> Cell {
        Cell {
            scenario: scenario.into(),
            server: server.into(),
            workers,
            concurrency: c,
            samples: rps
                .iter()
                .map(|&rps| Sample {
                    requests_per_second: rps,
                    p50_ms: c as f64 * 0.1,
                    p99_ms: c as f64 * 0.5,
                    complete: 1000,
                    failed: 0,
                })
                .collect(),
            errors: vec![],
        }
    }

    fn results() -> Results {
        let scenarios = ["static small", "proxy"];
        let mut cells = Vec::new();
        // Highest concurrency first, so the tables have to sort their rows.
        for scenario in scenarios {
            for workers in [2, 1] {
                for c in [100, 10, 1] {
                    for (i, server) in SERVERS.iter().enumerate() {
                        let rps = (1000 * workers * c + 100 * i) as f64;
                        cells.push(cell(scenario, server, workers, c, &[rps, rps + 10.0]));
                    }
                }
            }
        }
        let mut r = Results {
            name: "seeds".into(),
            machine: "2 CPUs, Test CPU, Linux 6.18".into(),
            date: "2026-12-01 03:14".into(),
            duration_s: 10.0,
            repeats: 3,
            servers: ["ringside", "nginx", "lighttpd", "h2o"]
                .map(String::from)
                .into(),
            scenarios: scenarios.map(String::from).into(),
            skipped: vec![Skipped {
                server: "h2o".into(),
                reason: "not installed".into(),
            }],
            cells,
        };
        let mut set = |c: Cell| {
            let i = r
                .cells
                .iter()
                .position(|o| {
                    (&o.scenario, &o.server, o.workers, o.concurrency)
                        == (&c.scenario, &c.server, c.workers, c.concurrency)
                })
                .unwrap();
            r.cells[i] = c;
        };
        set(cell(
            "static small",
            "ringside",
            1,
            10,
            &[24953.0, 23900.0, 25100.0],
        ));
        set(cell(
            "static small",
            "nginx",
            1,
            10,
            &[15575.0, 15000.0, 16000.0],
        ));
        set(cell(
            "static small",
            "lighttpd",
            1,
            10,
            &[30000.0, 29000.0, 31000.0],
        ));
        let mut failing = cell("static small", "nginx", 2, 100, &[1.0, 2.0, 3.0]);
        for s in &mut failing.samples {
            s.failed = 5;
        }
        set(failing);
        let mut errored = cell("proxy", "lighttpd", 2, 1, &[]);
        errored.errors.push("did not start".into());
        set(errored);
        set(cell("proxy", "ringside", 2, 100, &[]));
        let mut partial = cell("proxy", "nginx", 1, 10, &[11000.0, 11500.0]);
        partial.errors.push("client failed".into());
        set(partial);
        r.cells.retain(|c| {
            !(c.scenario == "proxy"
                && c.server == "lighttpd"
                && c.workers == 1
                && c.concurrency == 1)
        });
        r
    }

    /// The table rows of one scenario's section.
    fn rows_of<'a>(md: &'a str, scenario: &str) -> Vec<&'a str> {
        let section = md.split("### ").find(|s| s.starts_with(scenario)).unwrap();
        section
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| workers"))
            .collect()
    }

    #[test]
    fn markdown_compares_with_ringside() {
        let md = markdown(&results());
        assert!(md.starts_with("## Shootout: seeds\n"), "{md}");
        assert!(md.contains(
            "2 CPUs, Test CPU, Linux 6.18; 2026-12-01 03:14 UTC; 10 s per run; \
             medians of 3 interleaved repeats; spread is min–max."
        ));
        // Skipped servers get a line, not a column.
        assert!(md.contains(
            "| workers | c | ringside | nginx | lighttpd |\n|---:|---:|---:|---:|---:|\n"
        ));
        assert!(md.contains("\n- h2o skipped: not installed\n"));
        assert!(md.find("### static small").unwrap() < md.find("### proxy").unwrap());

        let rows = rows_of(&md, "static small");
        let keys: Vec<&str> = rows
            .iter()
            .map(|r| &r[..r.match_indices('|').nth(2).unwrap().0])
            .collect();
        assert_eq!(
            keys,
            [
                "| 1 | 1 ",
                "| 1 | 10 ",
                "| 1 | 100 ",
                "| 2 | 1 ",
                "| 2 | 10 ",
                "| 2 | 100 "
            ]
        );
        // 15,575 / 24,953 = 0.624; 30,000 / 24,953 = 1.202.
        assert_eq!(
            rows[1],
            "| 1 | 10 | 24,953 (23,900–25,100) | 0.62× (15,575) | 1.20× (30,000) |"
        );
        // 2 / 200,005 rounds to 0.00; 15 failed over three repeats.
        assert_eq!(
            rows[5],
            "| 2 | 100 | 200,005 (200,000–200,010) | 0.00× (2) ⚠ 15 failed | 1.00× (200,205) |"
        );

        let rows = rows_of(&md, "proxy");
        assert_eq!(
            rows[0],
            "| 1 | 1 | 1,005 (1,000–1,010) | 1.10× (1,105) | — |"
        );
        // 11,250 / 10,005 = 1.124.
        assert_eq!(
            rows[1],
            "| 1 | 10 | 10,005 (10,000–10,010) | 1.12× (11,250) ⚠ 1 of 3 repeats errored | 1.02× (10,205) |"
        );
        assert_eq!(
            rows[3],
            "| 2 | 1 | 2,005 (2,000–2,010) | 1.05× (2,105) | error |"
        );
        // No ringside figure, so no ratios.
        assert_eq!(rows[5], "| 2 | 100 | — | 200,105 | 200,205 |");
    }

    #[test]
    fn numbers() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(999.6), "1,000");
        assert_eq!(thousands(1234567.0), "1,234,567");
        assert_eq!(thousands(-1234.0), "-1,234");
        assert_eq!(axis_number(0.123), "0.12");
        assert_eq!(axis_number(2.5), "2.5");
        assert_eq!(axis_number(20000.0), "20,000");
        assert_eq!(file_stem("static small/1k é"), "static-small-1k");
        assert_eq!(
            file_stem("static 26 B (h2, 10 streams)"),
            "static-26-B-h2-10-streams"
        );
        assert_eq!(file_stem("fastcgi hello.php"), "fastcgi-hello.php");
    }

    #[test]
    fn charts_per_scenario_and_worker_count() {
        let dir = std::env::temp_dir().join(format!("ringside-report-{}", std::process::id()));
        let paths = write_charts(&results(), &dir).unwrap();
        let names: Vec<String> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let mut expected = Vec::new();
        for s in ["static-small", "proxy"] {
            for w in [1, 2] {
                expected.push(format!("{s}-w{w}-rps.svg"));
                expected.push(format!("{s}-w{w}-latency.svg"));
            }
        }
        assert_eq!(names, expected);

        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
        let rps = read("static-small-w1-rps.svg");
        assert!(
            rps.starts_with("<svg") && rps.trim_end().ends_with("</svg>"),
            "{rps}"
        );
        assert!(rps.contains("static small, 1 worker: requests/s"));
        assert!(rps.contains("requests/s") && rps.contains("concurrency"));
        for server in SERVERS {
            assert!(
                rps.contains(&format!(">\n{server}\n<")),
                "no legend for {server}"
            );
        }
        assert!(!rps.contains("h2o"));
        // A marker per server and concurrency.
        assert_eq!(rps.matches("<circle").count(), 9);
        // The ticks are the concurrencies measured.
        for tick in [">\n1\n<", ">\n10\n<", ">\n100\n<"] {
            assert!(rps.contains(tick), "no tick {tick:?}");
        }

        let latency = read("proxy-w2-latency.svg");
        assert!(latency.starts_with("<svg"));
        assert!(latency.contains("proxy, 2 workers: latency"));
        // lighttpd is on the chart even though one of its cells errored.
        for server in SERVERS {
            assert!(latency.contains(&format!("{server} p50")));
            assert!(latency.contains(&format!("{server} p99")));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
