package io.kvraft.server.metrics;

import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * {@code promtool check metrics} (Debian's {@code prometheus} package; {@code .ci/run} installs it).
 * Without promtool the calling test is skipped, except under CI ({@code CI=true}), where it fails.
 */
final class Promtool {

    private Promtool() {
    }

    /** promtool's complaints about this exposition text (empty when it has none). */
    static String checkMetrics(String text) throws IOException, InterruptedException {
        String promtool = find();
        Process p = new ProcessBuilder(promtool, "check", "metrics").redirectErrorStream(true).start();
        try (OutputStream in = p.getOutputStream()) {
            in.write(text.getBytes(StandardCharsets.UTF_8));
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("promtool check metrics did not finish in 60 s");
        }
        if (p.exitValue() != 0 && out.isBlank()) {
            return "promtool exited " + p.exitValue();
        }
        return out.strip();
    }

    private static String find() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            Path candidate = Path.of(dir.isEmpty() ? "." : dir, "promtool");
            if (Files.isExecutable(candidate)) {
                return candidate.toString();
            }
        }
        if ("true".equals(System.getenv("CI"))) {
            throw new AssertionError("promtool is not installed (apt-get install prometheus; .ci/run does)");
        }
        Assumptions.abort("promtool is not installed (apt-get install prometheus)");
        return null;
    }
}
