package io.kvraft.server.backup;

import io.kvraft.server.store.RangeCapture;
import io.kvraft.server.store.ScanPage;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/** Sessions on a fake clock: found while used, gone (and their capture freed) once idle past the timeout or closed. */
class BackupSessionsTest {

    private final AtomicLong nowNanos = new AtomicLong(1_000_000_000L);
    private final BackupSessions sessions = new BackupSessions(nowNanos::get, 60_000, 2);

    private static final class CountingCapture implements RangeCapture {
        final AtomicInteger closes = new AtomicInteger();

        @Override
        public long keyCount() {
            return 0;
        }

        @Override
        public ScanPage page(byte[] from, ScanPage.Builder page) {
            return page.build(false);
        }

        @Override
        public ScanPage systemPage(byte[] from, ScanPage.Builder page) {
            return page.build(false);
        }

        @Override
        public void close() {
            closes.incrementAndGet();
        }
    }

    private void advanceMs(long ms) {
        nowNanos.addAndGet(ms * 1_000_000L);
    }

    @Test
    void when_aSessionIsReadWithinTheTimeout_then_itStays_andOnceIdlePastIt_then_itExpiresAndFreesItsCapture() {
        CountingCapture capture = new CountingCapture();
        long id = sessions.open(3, capture).id();

        advanceMs(50_000);
        assertThat(sessions.get(id)).isNotNull(); // a read: the idle time starts again
        advanceMs(50_000);
        assertThat(sessions.expireIdle()).isZero();
        advanceMs(10_001);

        assertThat(sessions.expireIdle()).isEqualTo(1);
        assertThat(sessions.get(id)).isNull();
        assertThat(capture.closes).hasValue(1);
    }

    @Test
    void when_aSessionIsClosedTwice_then_itsCaptureIsFreedOnce_andOtherSessionsStay() {
        CountingCapture a = new CountingCapture();
        CountingCapture b = new CountingCapture();
        long ida = sessions.open(1, a).id();
        long idb = sessions.open(2, b).id();

        sessions.close(ida);
        sessions.close(ida);

        assertThat(a.closes).hasValue(1);
        assertThat(sessions.get(idb)).isNotNull();
        assertThat(ida).isNotEqualTo(idb);
    }

    @Test
    void when_theLimitIsReached_then_thereIsNoRoom_andWhenClosed_then_newCapturesAreFreedAtOnce() {
        sessions.open(1, new CountingCapture());
        assertThat(sessions.hasRoom()).isTrue();
        sessions.open(2, new CountingCapture());
        assertThat(sessions.hasRoom()).isFalse();

        sessions.close();
        CountingCapture late = new CountingCapture();

        assertThat(sessions.size()).isZero();
        assertThat(sessions.open(3, late)).isNull();
        assertThat(late.closes).hasValue(1);
        assertThat(sessions.hasRoom()).isFalse();
    }
}
