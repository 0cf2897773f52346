package io.kvraft.server.raft;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.option.RaftOptions;
import io.kvraft.server.InProcessCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.reflect.Field;
import java.nio.file.Path;
import java.util.concurrent.ScheduledThreadPoolExecutor;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Timeout(value = 120, unit = SECONDS)
class ScannerPeriodRaftOptionsTest {

    @TempDir
    Path dir;

    @Test
    void when_anyoneButTheReadOnlyServiceAsks_then_theElectionDelayIsTheConfiguredOne() {
        ScannerPeriodRaftOptions options = new ScannerPeriodRaftOptions(5_000);
        options.setMaxElectionDelayMs(700);
        assertThat(options.getMaxElectionDelayMs()).isEqualTo(700);
        options.setMaxElectionDelayMs(20); // what a split's first campaigner sets after its start
        assertThat(options.getMaxElectionDelayMs()).isEqualTo(20);
    }

    @Test
    void when_thePeriodIsNotPositive_then_itIsRefused() {
        assertThatThrownBy(() -> new ScannerPeriodRaftOptions(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("positive");
    }

    @Test
    void when_aRegionStarts_then_itsReadIndexScannerRunsAtTheLongPeriodAndItsElectionsKeepJraftsDelay()
            throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(1, 1, dir, "memory")) {
            Node node = cluster.node(0).host().region(1).node();
            RaftOptions options = node.getOptions().getRaftOptions();
            assertThat(options).isInstanceOf(ScannerPeriodRaftOptions.class);
            long period = ((ScannerPeriodRaftOptions) options).scannerPeriodMs();
            assertThat(period).isGreaterThan(new RaftOptions().getMaxElectionDelayMs());
            assertThat(options.getMaxElectionDelayMs()).isEqualTo(new RaftOptions().getMaxElectionDelayMs());

            // jraft keeps the scanner's executor in its read-only service; its one task repeats at the long period
            Object readOnly = field(node, "readOnlyService");
            Object executor = field(readOnly, "scheduledExecutorService");
            ScheduledThreadPoolExecutor scanner = (ScheduledThreadPoolExecutor) field(executor, "e");
            Object task = scanner.getQueue().peek();
            assertThat(task).isNotNull();
            assertThat((long) field(task, "period")).isEqualTo(MILLISECONDS.toNanos(period));
        }
    }

    private static Object field(Object owner, String name) throws ReflectiveOperationException {
        for (Class<?> c = owner.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(owner);
            } catch (NoSuchFieldException ignored) {
                // look in the superclass
            }
        }
        throw new NoSuchFieldException(owner.getClass().getName() + "." + name);
    }
}
