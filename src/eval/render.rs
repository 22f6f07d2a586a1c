//! Markdown and self-contained HTML (inline SVG chart) renderings of evaluation results.

use super::quixbugs::{EvalResults, ProgramResult, ProgramStatus};
use std::fmt::Write as _;

fn status_color(status: ProgramStatus) -> &'static str {
    match status {
        ProgramStatus::Genuine => "#2e7d32",
        ProgramStatus::PlausibleOnly => "#f9a825",
        ProgramStatus::NotFixed => "#c62828",
        ProgramStatus::Error => "#757575",
    }
}

fn patch_summary(r: &ProgramResult) -> String {
    r.patch.as_ref().map_or_else(String::new, |p| format!("{}:{} {}: {}", p.file, p.line, p.operator, p.description))
}

/// Escape a table cell: pipes, newlines, backticks kept as code-safe text.
fn md_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// `results.md`: one table row per program, then totals.
#[must_use]
pub fn markdown(results: &EvalResults) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# QuixBugs evaluation\n");
    let _ = writeln!(
        out,
        "`{}` · {} · timeout {:.0}s per program · seed {} · {:.1}s in total\n",
        md_cell(&results.path),
        results.tool,
        results.timeout_seconds,
        results.seed,
        results.seconds
    );
    let _ = writeln!(out, "| Program | Status | Time (s) | Candidates tried | Source | Patch | Reason |");
    let _ = writeln!(out, "|---|---|---:|---:|---|---|---|");
    for r in &results.programs {
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {} | {} | {} | {} |",
            md_cell(&r.name),
            r.status.label(),
            r.seconds,
            r.candidates_tried,
            r.patch.as_ref().map_or("", |p| p.source.as_str()),
            md_cell(&patch_summary(r)),
            md_cell(&r.reason)
        );
    }
    let t = &results.totals;
    let _ = writeln!(
        out,
        "\n**Totals:** {} programs: {} genuine, {} plausible-only, {} not fixed, {} errors.",
        t.programs, t.genuine, t.plausible_only, t.not_fixed, t.error
    );
    let _ = writeln!(out, "\n**Patches by source:** {}.", by_source(results));
    out
}

/// `operators 20 (18 genuine), language-model 2 (1 genuine)`: reported patches per source.
fn by_source(results: &EvalResults) -> String {
    let mut counts: std::collections::BTreeMap<&str, (usize, usize)> = std::collections::BTreeMap::new();
    for r in &results.programs {
        if let Some(patch) = &r.patch {
            let entry = counts.entry(patch.source.as_str()).or_default();
            entry.0 += 1;
            entry.1 += usize::from(r.status == ProgramStatus::Genuine);
        }
    }
    if counts.is_empty() {
        return "none".into();
    }
    let parts: Vec<String> =
        counts.iter().map(|(source, (n, genuine))| format!("{source} {n} ({genuine} genuine)")).collect();
    parts.join(", ")
}

/// Escape text for HTML element content and attribute values.
#[must_use]
pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// An inline SVG bar chart of the number of programs per status.
#[must_use]
pub fn svg_chart(results: &EvalResults) -> String {
    let (bar_w, gap, height, top, bottom) = (90.0_f64, 30.0_f64, 200.0_f64, 24.0_f64, 40.0_f64);
    let statuses = ProgramStatus::ALL;
    let max = statuses.iter().map(|&s| results.totals.get(s)).max().unwrap_or(0).max(1);
    let width = gap + statuses.len() as f64 * (bar_w + gap);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"programs per status\" width=\"{width:.0}\" height=\"{:.0}\" viewBox=\"0 0 {width:.0} {:.0}\">",
        top + height + bottom,
        top + height + bottom
    );
    for (i, &status) in statuses.iter().enumerate() {
        let count = results.totals.get(status);
        let h = height * count as f64 / max as f64;
        let x = gap + i as f64 * (bar_w + gap);
        let y = top + height - h;
        let _ = write!(
            svg,
            "<rect class=\"bar\" data-status=\"{label}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{bar_w:.1}\" height=\"{h:.1}\" fill=\"{color}\"><title>{label}: {count}</title></rect>\
             <text x=\"{cx:.1}\" y=\"{ty:.1}\" text-anchor=\"middle\" font-size=\"14\">{count}</text>\
             <text x=\"{cx:.1}\" y=\"{ly:.1}\" text-anchor=\"middle\" font-size=\"13\">{label}</text>",
            label = status.label(),
            color = status_color(status),
            cx = x + bar_w / 2.0,
            ty = (y - 6.0).max(14.0),
            ly = top + height + 22.0,
        );
    }
    svg.push_str("</svg>");
    svg
}

/// `results.html`: a self-contained page (no external resources) with the chart, the table and
/// every diff.
#[must_use]
pub fn html(results: &EvalResults) -> String {
    let t = &results.totals;
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>QuixBugs evaluation</title>\n<style>\
         body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}\
         table{border-collapse:collapse;width:100%}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}\
         td.num{text-align:right}pre{background:#f6f8fa;padding:8px;overflow-x:auto}\
         .s{font-weight:bold;color:#fff;padding:1px 6px;border-radius:3px}\
         </style>\n</head>\n<body>\n<h1>QuixBugs evaluation</h1>\n",
    );
    let _ = writeln!(
        out,
        "<p><code>{}</code> · {} · timeout {:.0}s per program · seed {} · {:.1}s in total</p>",
        html_escape(&results.path),
        html_escape(&results.tool),
        results.timeout_seconds,
        results.seed,
        results.seconds
    );
    let _ = writeln!(
        out,
        "<p><strong>{} programs:</strong> {} genuine, {} plausible-only, {} not fixed, {} errors.</p>",
        t.programs, t.genuine, t.plausible_only, t.not_fixed, t.error
    );
    out.push_str(&svg_chart(results));
    out.push_str(
        "\n<h2>Programs</h2>\n<table>\n<tr><th>Program</th><th>Status</th><th>Time (s)</th><th>Candidates tried</th><th>Patch</th><th>Reason</th></tr>\n",
    );
    for r in &results.programs {
        let _ = writeln!(
            out,
            "<tr><td><a href=\"#p-{id}\">{name}</a></td><td><span class=\"s\" style=\"background:{color}\">{status}</span></td><td class=\"num\">{secs:.1}</td><td class=\"num\">{tried}</td><td>{patch}</td><td>{reason}</td></tr>",
            id = html_escape(&r.name),
            name = html_escape(&r.name),
            color = status_color(r.status),
            status = r.status.label(),
            secs = r.seconds,
            tried = r.candidates_tried,
            patch = html_escape(&patch_summary(r)),
            reason = html_escape(&r.reason),
        );
    }
    out.push_str("</table>\n<h2>Diffs</h2>\n");
    for r in &results.programs {
        let _ =
            writeln!(out, "<h3 id=\"p-{}\">{} ({})</h3>", html_escape(&r.name), html_escape(&r.name), r.status.label());
        match &r.diff {
            Some(diff) => {
                let _ = writeln!(out, "<pre>{}</pre>", html_escape(diff));
            }
            None => out.push_str("<p>No patch.</p>\n"),
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::quixbugs::{PatchInfo, Totals, RESULTS_FORMAT_VERSION};

    fn program(name: &str, status: ProgramStatus, diff: Option<&str>) -> ProgramResult {
        ProgramResult {
            name: name.into(),
            status,
            seconds: 1.25,
            fix_seconds: 1.0,
            candidates_generated: 9,
            candidates_tried: 3,
            patch: diff.map(|_| PatchInfo {
                file: format!("python_programs/{name}.py"),
                line: 4,
                source: "operators".into(),
                operator: "comparison".into(),
                description: "`<` → `>`".into(),
            }),
            diff: diff.map(str::to_string),
            check: None,
            reason: "a | b <c>".into(),
        }
    }

    fn results() -> EvalResults {
        let programs = vec![
            program("alpha", ProgramStatus::Genuine, Some("-    if a < b:\n+    if a > b:\n")),
            program("beta", ProgramStatus::Genuine, Some("-x\n+y\n")),
            program("gamma", ProgramStatus::PlausibleOnly, Some("-1\n+2\n")),
            program("delta", ProgramStatus::NotFixed, None),
        ];
        EvalResults {
            format_version: RESULTS_FORMAT_VERSION,
            tool: "deepdebug test".into(),
            path: "/q".into(),
            timeout_seconds: 60.0,
            seed: 1,
            seconds: 5.0,
            totals: Totals::of(&programs),
            programs,
        }
    }

    #[test]
    fn markdown_has_a_row_per_program_and_totals() {
        let md = markdown(&results());
        assert!(
            md.contains(
                "| alpha | genuine | 1.2 | 3 | operators | python_programs/alpha.py:4 comparison: `<` → `>` | a \\| b <c> |"
            ),
            "{md}"
        );
        assert!(md.contains("| delta | not fixed |"));
        assert!(md.contains("4 programs: 2 genuine, 1 plausible-only, 1 not fixed, 0 errors."));
        insta::with_settings!({ snapshot_path => "../../tests/snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!("eval_quixbugs_markdown", md);
        });
    }

    #[test]
    fn html_is_self_contained_and_escaped() {
        let page = html(&results());
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<svg"));
        assert!(!page.contains("<script") && !page.contains("src=\"http") && !page.contains("href=\"http"));
        assert!(page.contains("-    if a &lt; b:\n+    if a &gt; b:"));
        assert!(page.contains("a | b &lt;c&gt;"));
        assert!(page.contains("<h3 id=\"p-delta\">delta (not fixed)</h3>\n<p>No patch.</p>"));
    }

    #[test]
    fn chart_bars_are_proportional_to_counts() {
        let svg = svg_chart(&results());
        assert_eq!(svg.matches("<rect").count(), 4);
        assert!(svg.contains("data-status=\"genuine\" x=\"30.0\" y=\"24.0\" width=\"90.0\" height=\"200.0\""), "{svg}");
        assert!(
            svg.contains("data-status=\"plausible-only\" x=\"150.0\" y=\"124.0\" width=\"90.0\" height=\"100.0\""),
            "{svg}"
        );
        assert!(svg.contains("data-status=\"error\" x=\"390.0\" y=\"224.0\" width=\"90.0\" height=\"0.0\""), "{svg}");
        assert!(svg.contains("<title>not fixed: 1</title>"));
    }

    #[test]
    fn escaping_covers_markup_characters() {
        assert_eq!(html_escape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    }
}
