package io.kvraft.benchmark;

import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/**
 * A self-contained HTML page for a sweep: an inline SVG chart of p99 (and p50) latency against
 * achieved throughput, one point per step, and the step table. No scripts, no external resources.
 */
public final class SweepChart {

    private static final int W = 760;
    private static final int H = 440;
    private static final int LEFT = 70;
    private static final int RIGHT = 30;
    private static final int TOP = 40;
    private static final int BOTTOM = 60;
    private static final String[] PALETTE = {"#c33", "#36c", "#393", "#c90", "#909", "#099"};

    private SweepChart() {
    }

    public static String html(Sweep.Result r) {
        StringBuilder b = new StringBuilder();
        b.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
                .append("<title>kv-benchmark sweep</title>\n<style>\n")
                .append("body{font-family:sans-serif;margin:24px;color:#222}")
                .append("table{border-collapse:collapse;margin-top:16px}")
                .append("th,td{border:1px solid #ccc;padding:4px 10px;text-align:right}")
                .append("th{background:#f4f4f4}.peak{font-weight:bold}\n</style>\n</head>\n<body>\n")
                .append("<h1>kv-benchmark sweep by ").append(esc(r.kind())).append("</h1>\n")
                .append("<p>").append(esc(r.config() == null ? "" : r.config().describe())).append("<br>")
                .append(esc(String.format(Locale.ROOT, "started %s; each step %s s after a %s s warm-up",
                        r.startTime(), Sweep.fmt(r.stepDurationSeconds()), Sweep.fmt(r.stepWarmupSeconds()))))
                .append("</p>\n<p class=\"peak\">")
                .append(esc(String.format(Locale.ROOT, "peak throughput: %.0f ops/s at step %s", r.peakOpsPerSec(),
                        r.peakStep())))
                .append("</p>\n");
        b.append(svg(r.steps())).append('\n');
        b.append("<table>\n<tr><th>step</th><th>threads</th><th>target ops/s</th><th>ops/s</th><th>p50 ms</th>")
                .append("<th>p95 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>p99.99 ms</th><th>max ms</th>")
                .append("<th>errors</th><th>read mode</th><th>server CPU us/op</th></tr>\n");
        for (Sweep.Step s : r.steps()) {
            b.append(s.step().equals(r.peakStep()) ? "<tr class=\"peak\">" : "<tr>")
                    .append(td(s.step())).append(td(Integer.toString(s.threads())))
                    .append(td(s.targetOpsPerSec() > 0 ? Sweep.fmt(s.targetOpsPerSec()) : "closed"))
                    .append(td(f2(s.opsPerSec()))).append(td(f3(s.p50()))).append(td(f3(s.p95())))
                    .append(td(f3(s.p99()))).append(td(f3(s.p999()))).append(td(f3(s.p9999())))
                    .append(td(f3(s.max()))).append(td(Long.toString(s.errors())))
                    .append(td(s.readMode() == null ? "" : s.readMode()))
                    .append(td(s.serverCpuUsPerOp() == null ? "" : String.format(Locale.ROOT, "%.1f", s.serverCpuUsPerOp())))
                    .append("</tr>\n");
        }
        b.append("</table>\n</body>\n</html>\n");
        return b.toString();
    }

    /** The chart alone: x achieved ops/s, y latency ms. */
    public static String svg(List<Sweep.Step> steps) {
        double maxX = niceCeil(steps.stream().mapToDouble(Sweep.Step::opsPerSec).max().orElse(1));
        double maxY = niceCeil(steps.stream().mapToDouble(Sweep.Step::p99).max().orElse(1));
        int pw = W - LEFT - RIGHT;
        int ph = H - TOP - BOTTOM;
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                + " viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n", W, H, W, H));
        b.append(String.format(Locale.ROOT, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>%n", W, H));
        b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"15\">latency vs throughput</text>%n",
                LEFT));
        for (int i = 0; i <= 5; i++) {
            double xv = maxX * i / 5;
            double yv = maxY * i / 5;
            double x = LEFT + pw * i / 5.0;
            double y = TOP + ph - ph * i / 5.0;
            b.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>%n",
                    x, TOP, x, TOP + ph));
            b.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>%n",
                    LEFT, y, LEFT + pw, y));
            b.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
                    x, TOP + ph + 18, esc(tick(xv))));
            b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n",
                    LEFT - 6, y + 4, esc(tick(yv))));
        }
        b.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>%n",
                LEFT, TOP + ph, LEFT + pw, TOP + ph));
        b.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>%n",
                LEFT, TOP, LEFT, TOP + ph));
        b.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">achieved ops/s</text>%n",
                LEFT + pw / 2.0, H - 14));
        b.append(String.format(Locale.ROOT, "<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\""
                + " transform=\"rotate(-90 16 %.1f)\">latency (ms)</text>%n", TOP + ph / 2.0, TOP + ph / 2.0));
        java.util.Map<String, List<Sweep.Step>> byMode = new java.util.LinkedHashMap<>();
        for (Sweep.Step s : steps) {
            byMode.computeIfAbsent(String.valueOf(s.readMode()), k -> new java.util.ArrayList<>()).add(s);
        }
        if (byMode.size() > 1) {
            // read modes laddered: one p99 line per mode
            int k = 0;
            for (java.util.Map.Entry<String, List<Sweep.Step>> e : byMode.entrySet()) {
                String color = PALETTE[k % PALETTE.length];
                series(b, e.getValue(), Sweep.Step::p99, maxX, maxY, color, false);
                b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" fill=\"%s\">&#9679; p99 %s</text>%n",
                        LEFT + 10, TOP + 14 + 16 * k, color, esc(e.getKey())));
                k++;
            }
        } else {
            series(b, steps, Sweep.Step::p50, maxX, maxY, "#9ab", false);
            series(b, steps, Sweep.Step::p99, maxX, maxY, "#c33", true);
            b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" fill=\"#c33\">&#9679; p99</text>%n",
                    LEFT + pw - 110, TOP + 14));
            b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" fill=\"#9ab\">&#9679; p50</text>%n",
                    LEFT + pw - 55, TOP + 14));
        }
        b.append("</svg>");
        return b.toString();
    }

    private static void series(StringBuilder b, List<Sweep.Step> steps, ToDoubleFunction<Sweep.Step> y, double maxX,
                               double maxY, String color, boolean labels) {
        int pw = W - LEFT - RIGHT;
        int ph = H - TOP - BOTTOM;
        StringBuilder points = new StringBuilder();
        for (Sweep.Step s : steps) {
            double px = LEFT + pw * s.opsPerSec() / maxX;
            double py = TOP + ph - ph * Math.min(y.applyAsDouble(s), maxY) / maxY;
            points.append(String.format(Locale.ROOT, "%.1f,%.1f ", px, py));
        }
        b.append(String.format(Locale.ROOT, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>%n",
                color, points.toString().trim()));
        for (Sweep.Step s : steps) {
            double px = LEFT + pw * s.opsPerSec() / maxX;
            double py = TOP + ph - ph * Math.min(y.applyAsDouble(s), maxY) / maxY;
            b.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\">"
                            + "<title>%s: %.0f ops/s, %.3f ms</title></circle>%n", px, py, color, esc(s.step()),
                    s.opsPerSec(), y.applyAsDouble(s)));
            if (labels) {
                b.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#555\">%s</text>%n",
                        px + 6, py - 6, esc(s.step())));
            }
        }
    }

    /** The smallest 1, 2, 2.5 or 5 times a power of ten at or above {@code v} (1 for v <= 0). */
    static double niceCeil(double v) {
        if (!(v > 0) || !Double.isFinite(v)) {
            return 1;
        }
        double p = Math.pow(10, Math.floor(Math.log10(v)));
        for (double m : new double[]{1, 2, 2.5, 5, 10}) {
            if (m * p >= v * (1 - 1e-9)) {
                return m * p;
            }
        }
        return 10 * p;
    }

    private static String tick(double v) {
        if (v == 0) {
            return "0";
        }
        if (v >= 1_000_000) {
            return trim(v / 1_000_000) + "M";
        }
        if (v >= 10_000) {
            return trim(v / 1000) + "k";
        }
        return trim(v);
    }

    private static String trim(double v) {
        String s = String.format(Locale.ROOT, "%.3f", v);
        s = s.replaceAll("0+$", "");
        return s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
    }

    private static String td(String s) {
        return "<td>" + esc(s) + "</td>";
    }

    private static String f2(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }

    private static String f3(double v) {
        return String.format(Locale.ROOT, "%.3f", v);
    }

    static String esc(String s) {
        if (s == null) {
            return "";
        }
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }
}
