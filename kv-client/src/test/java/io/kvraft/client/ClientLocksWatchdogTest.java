package io.kvraft.client;

import io.kvraft.client.batch.CoordAnswer;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.CoordResult;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto.LockInfo;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The lock watchdog on a manual clock and timer: everything runs on the test's thread when the test moves the
 * clock, so there is nothing to wait for and no real time in the assertions.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ClientLocksWatchdogTest {

    private static final long MS = 1_000_000L;
    private static final long LEASE_MS = 3_000;
    private static final long TOKEN = 7;
    private static final byte[] KEY = "job-1".getBytes(StandardCharsets.US_ASCII);

    /** One op the locks sent: what, when (fake clock), and its answer, which the fake's policy gives. */
    record Sent(WriteOp op, long atNanos) {
    }

    /** A backend on a manual clock: timer tasks run when {@link #advanceTo} passes their time. */
    static final class FakeBackend implements ClientLocks.Backend {
        long now = 1_000 * MS; // not 0, so that a deadline of 0 would stand out
        final List<Sent> sent = new ArrayList<>();
        /** The answer to each op sent; the default grants an acquire and accepts renewals and releases. */
        Function<WriteOp, CompletableFuture<CoordAnswer>> answers = op -> ok();
        private final PriorityQueue<long[]> due = new PriorityQueue<>(Comparator.comparingLong((long[] t) -> t[0])
                .thenComparingLong(t -> t[1]));
        private final List<Runnable> tasks = new ArrayList<>();
        boolean closed;

        @Override
        public CompletableFuture<CoordAnswer> coordOp(WriteOp op, long deadlineNanos) {
            sent.add(new Sent(op, now));
            return answers.apply(op);
        }

        @Override
        public boolean later(Runnable task, long delayNanos) {
            if (closed) {
                return false;
            }
            if (delayNanos == 0) {
                task.run();
                return true;
            }
            tasks.add(task);
            due.add(new long[]{now + delayNanos, tasks.size() - 1});
            return true;
        }

        @Override
        public long deadline() {
            return now + 5_000 * MS;
        }

        /** Moves the clock to {@code t}, running every task due by then at its own time, in order. */
        void advanceTo(long t) {
            while (!due.isEmpty() && due.peek()[0] <= t) {
                long[] next = due.poll();
                now = Math.max(now, next[0]);
                tasks.get((int) next[1]).run();
            }
            now = t;
        }

        List<Sent> sentOf(WriteOpType type) {
            return sent.stream().filter(s -> s.op().getType() == type).toList();
        }

        static CompletableFuture<CoordAnswer> ok() {
            return CompletableFuture.completedFuture(new CoordAnswer(true, CoordResult.newBuilder()
                    .setLock(LockInfo.newBuilder().setToken(TOKEN).setCount(1).setLeaseLeftMs(LEASE_MS)).build()));
        }

        static CompletableFuture<CoordAnswer> refused() {
            return CompletableFuture.completedFuture(new CoordAnswer(false, CoordResult.newBuilder()
                    .setLock(LockInfo.newBuilder().setToken(TOKEN + 1).setCount(1).setLeaseLeftMs(LEASE_MS)).build()));
        }

        static CompletableFuture<CoordAnswer> timedOut() {
            return CompletableFuture.failedFuture(new KvException(ErrorCode.TIMEOUT, "no answer"));
        }
    }

    private final FakeBackend backend = new FakeBackend();
    private final ClientLocks locks = new ClientLocks(backend, () -> backend.now);

    private LockHandle acquire() {
        LockHandle h = locks.tryLock(KEY, LEASE_MS, 0).join();
        assertThat(h).isNotNull();
        assertThat(h.token()).isEqualTo(TOKEN);
        assertThat(h.isHeld()).isTrue();
        return h;
    }

    @Test
    void when_renewalsSucceed_then_eachIsSentWithinTheLeaseOfTheLastAndTheLockStaysHeldLongPastOneLease() {
        long start = backend.now;
        LockHandle h = acquire();

        backend.advanceTo(start + 10 * LEASE_MS * MS);

        List<Sent> renewals = backend.sentOf(WriteOpType.LOCK_RENEW);
        assertThat(renewals).hasSizeGreaterThanOrEqualTo(9); // every third of the lease: about 30 in 10 leases
        long last = start;
        for (Sent r : renewals) {
            assertThat(r.op().getToken()).isEqualTo(TOKEN);
            assertThat(r.op().getLeaseMs()).isEqualTo(LEASE_MS);
            assertThat(r.op().getHolder()).isEqualTo(locks.holder());
            assertThat(r.atNanos() - last).as("renewal sent before the lease of the last success ran out")
                    .isPositive().isLessThan(LEASE_MS * MS);
            last = r.atNanos();
        }
        assertThat(h.isHeld()).isTrue();
        assertThat(h.lost()).isNotDone();
    }

    @Test
    void when_renewalsFailForLongerThanTheLease_then_theHandleReportsTheLockLostAndStopsRenewing() {
        long start = backend.now;
        LockHandle h = acquire();
        backend.answers = op -> FakeBackend.timedOut();

        backend.advanceTo(start + LEASE_MS * MS - 1);
        assertThat(backend.sentOf(WriteOpType.LOCK_RENEW)).as("renewals tried within the lease").isNotEmpty();
        assertThat(h.isHeld()).as("still surely held within the lease").isTrue();
        assertThat(h.lost()).isNotDone();

        backend.advanceTo(start + LEASE_MS * MS + LEASE_MS * MS / 3);
        assertThat(h.isHeld()).isFalse();
        assertThat(h.lost()).isDone();
        int tried = backend.sentOf(WriteOpType.LOCK_RENEW).size();
        backend.advanceTo(backend.now + 10 * LEASE_MS * MS);
        assertThat(backend.sentOf(WriteOpType.LOCK_RENEW)).as("no renewal once lost").hasSize(tried);
        assertThat(KvException.unwrap(h.unlock().handle((v, e) -> e).join()).code()).isEqualTo(ErrorCode.LOCK_NOT_HELD);
    }

    @Test
    void when_aRenewalIsRefused_then_theLockIsLostAtOnce() {
        long start = backend.now;
        LockHandle h = acquire();
        backend.answers = op -> FakeBackend.refused();

        backend.advanceTo(start + LEASE_MS * MS / 2); // past the first tick, well within the lease
        assertThat(backend.sentOf(WriteOpType.LOCK_RENEW)).hasSize(1);
        assertThat(h.lost()).isDone();
        assertThat(h.isHeld()).isFalse();
    }

    @Test
    void when_theHandleIsClosed_then_itIsReleasedAndRenewalsStop() {
        long start = backend.now;
        LockHandle h = acquire();
        backend.advanceTo(start + LEASE_MS * MS / 2);
        int renewedBefore = backend.sentOf(WriteOpType.LOCK_RENEW).size();
        assertThat(renewedBefore).isEqualTo(1);

        h.close();

        assertThat(backend.sentOf(WriteOpType.LOCK_RELEASE)).hasSize(1);
        assertThat(backend.sentOf(WriteOpType.LOCK_RELEASE).get(0).op().getToken()).isEqualTo(TOKEN);
        assertThat(h.isHeld()).isFalse();
        backend.advanceTo(backend.now + 10 * LEASE_MS * MS);
        assertThat(backend.sentOf(WriteOpType.LOCK_RENEW)).as("no renewal after close").hasSize(renewedBefore);
        assertThat(h.lost()).as("released, not lost").isNotDone();
    }

    @Test
    void when_oneOfTwoReentrantHandlesIsClosed_then_renewalsGoOnForTheOther() {
        long start = backend.now;
        LockHandle first = acquire();
        LockHandle second = acquire();

        first.close();
        backend.advanceTo(start + 5 * LEASE_MS * MS);

        assertThat(backend.sentOf(WriteOpType.LOCK_RENEW)).hasSizeGreaterThanOrEqualTo(4);
        assertThat(second.isHeld()).isTrue();
        assertThat(first.isHeld()).isFalse();
    }
}
