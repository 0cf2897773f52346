package io.kvraft.server.launch;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * How signals end the process ({@link GracefulShutdown}), with the process's exits recorded instead of taken: a
 * node whose shutdown is held by a latch stands for one that cannot finish (peers gone, a stuck close). The real
 * signals and exit codes of a node process are {@code ForcedExitTest}'s.
 */
@Timeout(value = 60, unit = SECONDS)
class ShutdownSignalsTest {

    private final List<Integer> exits = new CopyOnWriteArrayList<>();
    private final List<Integer> halts = new CopyOnWriteArrayList<>();
    private final CountDownLatch release = new CountDownLatch(1);
    private final CountDownLatch started = new CountDownLatch(1);
    private final AtomicLong givenTimeout = new AtomicLong(-1);

    @AfterEach
    void releaseShutdowns() {
        release.countDown();
    }

    /** A node whose shutdown lasts until the test releases it. */
    private void stuckShutdown(long timeoutMs) {
        givenTimeout.set(timeoutMs);
        started.countDown();
        try {
            release.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private GracefulShutdown shutdown(long timeoutMs) {
        return new GracefulShutdown(timeoutMs, exits::add, halts::add);
    }

    @Test
    void when_theShutdownOutlastsItsTimeout_then_theProcessHaltsWithExit1() {
        GracefulShutdown g = shutdown(200);
        g.attach(this::stuckShutdown);
        g.onSignal("SIGTERM");
        await().atMost(30, SECONDS).until(() -> !halts.isEmpty());
        assertThat(halts).containsExactly(GracefulShutdown.EXIT_FORCED);
        assertThat(exits).as("a halted shutdown never exits by the normal way").isEmpty();
        assertThat(givenTimeout).as("the node is told its budget").hasValue(200);
    }

    @Test
    void when_aSecondSignalArrivesDuringTheShutdown_then_theProcessHaltsAtOnce() throws Exception {
        GracefulShutdown g = shutdown(3_600_000);
        g.attach(this::stuckShutdown);
        g.onSignal("SIGTERM");
        assertThat(started.await(30, SECONDS)).as("the first signal starts the shutdown").isTrue();
        assertThat(halts).isEmpty();
        g.onSignal("SIGINT");
        assertThat(halts).containsExactly(GracefulShutdown.EXIT_FORCED);
        assertThat(exits).isEmpty();
    }

    @Test
    void when_theShutdownFinishes_then_theProcessExits0() {
        GracefulShutdown g = shutdown(3_600_000);
        g.attach(timeoutMs -> givenTimeout.set(timeoutMs));
        g.onSignal("SIGTERM");
        await().atMost(30, SECONDS).until(() -> !exits.isEmpty());
        assertThat(exits).containsExactly(0);
        assertThat(halts).isEmpty();
        assertThat(givenTimeout).hasValue(3_600_000);
    }

    @Test
    void when_aSignalArrivesWhileTheNodeStarts_then_theShutdownRunsOnceItIsUp() {
        GracefulShutdown g = shutdown(3_600_000);
        g.onSignal("SIGTERM");
        assertThat(exits).as("nothing to stop yet: the signal is held").isEmpty();
        g.attach(timeoutMs -> givenTimeout.set(timeoutMs));
        await().atMost(30, SECONDS).until(() -> !exits.isEmpty());
        assertThat(exits).containsExactly(0);
        assertThat(halts).isEmpty();
    }
}
