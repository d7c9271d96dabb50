//! index.html: one self-contained page (inline CSS and SVG, no script, nothing fetched):
//! report.md rendered with pulldown-cmark, then every plot.

use pulldown_cmark::{html, Options, Parser};

use super::plots::Plot;

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1240px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}th,td{border:1px solid #ccc;padding:0.3em 0.6em;text-align:right}\
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}code{font-size:0.95em}\
figure{margin:2em 0}figcaption{font-weight:600;margin-bottom:0.5em}svg{max-width:100%;height:auto}";

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page.
pub fn render(title: &str, markdown: &str, plots: &[Plot]) -> String {
    let mut body = String::new();
    html::push_html(&mut body, Parser::new_ext(markdown, Options::ENABLE_TABLES));
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}<h2 id=\"plots\">Plots</h2>\n",
        escape(title)
    );
    for p in plots {
        out.push_str(&format!(
            "<figure class=\"plot\" id=\"{}\" data-plot=\"{}\">\n<figcaption>{}</figcaption>\n{}\n</figure>\n",
            escape(&p.id),
            escape(&p.id),
            escape(&p.title),
            p.svg
        ));
    }
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_holds_the_tables_and_every_plot_inline() {
        let plots = vec![Plot {
            id: "ramp-a".into(),
            title: "p99 <& failed".into(),
            svg: "<svg xmlns=\"http://www.w3.org/2000/svg\"><path d=\"M0 0L1 1\"/></svg>".into(),
        }];
        let page = render("Report", "# R\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", &plots);
        assert!(
            page.contains("<table>") && page.contains("<td>1</td>"),
            "{page}"
        );
        assert!(page.contains("data-plot=\"ramp-a\"") && page.contains("<path d="));
        assert!(page.contains("p99 &lt;&amp; failed"));
        // Nothing to run and nothing to fetch.
        assert!(!page.contains("<script") && !page.contains("src=") && !page.contains("<link"));
    }
}
