package io.kvraft.benchmark;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/** The servers' block of a run report: the window's CPU in all and per node, and the regions each node led. */
class ServerUsageTest {

    @Test
    void when_aWindowIsMeasured_then_eachNodesCoresAndLeadersArePrinted_andTheCoresAddUpToTheTotal() {
        long self = ProcessHandle.current().pid();
        // the same process twice stands in for two nodes: each gets the CPU this test burns in the window
        ServerUsage usage = ServerUsage.start(List.of(self, self), List.of("settings (test): nodes=2"),
                () -> List.of(13, 11));
        usage.windowStarted();
        // 0.3 s of this thread's own CPU, however long a busy machine takes to give it
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        long spin = threads.getCurrentThreadCpuTime() + 300_000_000L;
        long x = 0;
        while (threads.getCurrentThreadCpuTime() < spin) {
            x += Long.numberOfTrailingZeros(System.nanoTime());
        }
        usage.windowEnded();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        usage.print(new PrintStream(bytes, true, StandardCharsets.UTF_8), 1000, 1.0, 2000, 2.0);
        String text = bytes.toString(StandardCharsets.UTF_8);

        assertThat(x).isNotNegative();
        assertThat(text).contains("settings (test): nodes=2").contains("regions led per node as it started: 13 / 11");
        Matcher total = Pattern.compile("in the measured 1 s \\(([0-9.]+) cores\\)").matcher(text);
        Matcher perNode = Pattern.compile("server CPU per node in the window \\(cores\\): ([0-9.]+) / ([0-9.]+);")
                .matcher(text);
        assertThat(total.find()).as(text).isTrue();
        assertThat(perNode.find()).as(text).isTrue();
        double a = Double.parseDouble(perNode.group(1));
        double b = Double.parseDouble(perNode.group(2));
        assertThat(a).isGreaterThan(0.1); // it spun for 0.3 s of CPU (in a window given as 1 s)
        assertThat(a + b).isCloseTo(Double.parseDouble(total.group(1)), org.assertj.core.data.Offset.offset(0.02));
    }
}
