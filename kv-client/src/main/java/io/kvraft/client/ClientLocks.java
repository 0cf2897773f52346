package io.kvraft.client;

import io.kvraft.client.batch.CoordAnswer;
import io.kvraft.common.KvException;
import com.google.protobuf.ByteString;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto.LockInfo;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;

import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * The client's side of distributed locks: acquiring (polling with backoff while another holder has the
 * lock), one lease per key held, and its watchdog, which renews the lease every third of it and declares
 * the lock lost when a renewal is refused or none succeeded within the lease. The holder is this client
 * (one id per client, shared by its read-mode views): acquiring a key it holds already is re-entrant.
 */
final class ClientLocks {

    /** Bounds of a lease, as the servers check them. */
    static final long MAX_LEASE_MS = 86_400_000L;
    private static final long MIN_POLL_NANOS = 5_000_000L;
    private static final long MAX_POLL_NANOS = 500_000_000L;

    private final Backend client;
    private final ByteString holder;
    private final LongSupplier nanoClock;
    private final ConcurrentHashMap<ByteString, Lease> leases = new ConcurrentHashMap<>();

    /**
     * What the locks need of the client: lock ops sent (routed, batched and retried as writes), a timer for the
     * polls and the watchdog, and the deadline of a new op. {@link RoutingKvClient} in production; a test gives
     * a fake with a manual clock and timer.
     */
    interface Backend {
        /** A lock op, retried until {@code deadlineNanos} (on the locks' clock). */
        CompletableFuture<CoordAnswer> coordOp(WriteOp op, long deadlineNanos);

        /** Runs {@code task} after {@code delayNanos} (at once when 0); false once the client is closed. */
        boolean later(Runnable task, long delayNanos);

        /** The deadline of an op sent now. */
        long deadline();
    }

    ClientLocks(Backend client, LongSupplier nanoClock) {
        this.client = client;
        this.holder = ByteString.copyFrom(UUID.randomUUID().toString(), StandardCharsets.US_ASCII);
        this.nanoClock = nanoClock;
    }

    ByteString holder() {
        return holder;
    }

    /** One holding of a key by this client: its token, how long it is surely held, and its watchdog's state. */
    final class Lease {
        final ByteString key;
        final long token;
        final long leaseMs;
        final CompletableFuture<Void> lost = new CompletableFuture<>();
        /** On this client's clock: until then the lock is held for sure, unless a renewal was refused. Guarded by this. */
        private long deadlineNanos;
        /**
         * Handles of this client not given up; guarded by this. Counted here, not taken from the server: an unlock
         * whose outcome is unknown still gives its handle up, so the watchdog stops once every handle is given up
         * and a lock the servers still count runs out after its lease instead of being renewed for nobody.
         */
        private int count;

        Lease(ByteString key, long token, long leaseMs) {
            this.key = key;
            this.token = token;
            this.leaseMs = leaseMs;
        }

        synchronized boolean heldNow() {
            return count > 0 && !lost.isDone() && nanoClock.getAsLong() - deadlineNanos < 0;
        }

        private void lose() {
            synchronized (this) {
                count = 0;
            }
            leases.remove(key, this);
            lost.complete(null);
        }
    }

    CompletableFuture<LockHandle> tryLock(byte[] key, long leaseMs, long waitMs) {
        if (key == null || key.length == 0) {
            return failed(ErrorCode.INVALID_ARGUMENT, "empty lock key");
        }
        if (leaseMs < 1 || leaseMs > MAX_LEASE_MS) {
            return failed(ErrorCode.INVALID_ARGUMENT, "lock lease must be 1 to " + MAX_LEASE_MS + " ms, got " + leaseMs);
        }
        if (waitMs < 0) {
            return failed(ErrorCode.INVALID_ARGUMENT, "lock wait must be 0 ms or more, got " + waitMs);
        }
        // waits past about 100 years are forever
        long waitNanos = waitMs >= Long.MAX_VALUE / 1_000_000L / 2 ? -1 : waitMs * 1_000_000L;
        return attempt(ByteString.copyFrom(key), leaseMs, nanoClock.getAsLong(), waitNanos, 1);
    }

    /**
     * One acquire; while another holder has the lock, the next after a pause, until {@code waitNanos} after
     * {@code startNanos} (-1: no end).
     */
    private CompletableFuture<LockHandle> attempt(ByteString key, long leaseMs, long startNanos, long waitNanos,
                                                  int attempts) {
        long sent = nanoClock.getAsLong();
        WriteOp op = WriteOp.newBuilder().setType(WriteOpType.LOCK_ACQUIRE).setKey(key).setHolder(holder)
                .setLeaseMs(leaseMs).build();
        return client.coordOp(op, client.deadline()).thenCompose(answer -> {
            LockInfo info = answer.result().getLock();
            if (answer.succeeded()) {
                return CompletableFuture.completedFuture(granted(key, info, leaseMs, sent));
            }
            long waited = nanoClock.getAsLong() - startNanos;
            long left = waitNanos < 0 ? Long.MAX_VALUE : waitNanos - waited;
            if (left <= 0) {
                return CompletableFuture.completedFuture(null);
            }
            // poll with backoff, but never sleep past the holder's lease or the wait
            long pause = Math.min(MIN_POLL_NANOS << Math.min(attempts - 1, 10), MAX_POLL_NANOS);
            pause = Math.min(pause, Math.max(MIN_POLL_NANOS, info.getLeaseLeftMs() * 1_000_000L));
            pause = Math.max(1, Math.min(pause, left));
            CompletableFuture<LockHandle> next = new CompletableFuture<>();
            if (!client.later(() -> attempt(key, leaseMs, startNanos, waitNanos, attempts + 1).whenComplete((h, e) -> {
                if (e != null) {
                    next.completeExceptionally(e);
                } else {
                    next.complete(h);
                }
            }), pause)) {
                next.completeExceptionally(new KvException(ErrorCode.UNAVAILABLE, "client closed"));
            }
            return next;
        });
    }

    /** An acquire succeeded: the key's lease (new, or the one re-entered) and a handle on it. */
    private LockHandle granted(ByteString key, LockInfo info, long leaseMs, long sentNanos) {
        Lease fresh = new Lease(key, info.getToken(), leaseMs);
        Lease lease = leases.compute(key, (k, old) -> old != null && old.token == info.getToken() && !old.lost.isDone()
                ? old : fresh);
        if (lease != fresh && lease.token != info.getToken()) {
            lease.lose(); // unreachable: a live lease of another token than the server's
        }
        boolean start;
        synchronized (lease) {
            start = lease.count == 0;
            lease.count++;
            long deadline = sentNanos + leaseMs * 1_000_000L;
            if (start || deadline - lease.deadlineNanos > 0) {
                lease.deadlineNanos = deadline;
            }
        }
        if (start) {
            scheduleRenewal(lease);
        }
        return new LockHandle(this, lease);
    }

    private void scheduleRenewal(Lease lease) {
        long interval = Math.max(1, lease.leaseMs / 3) * 1_000_000L;
        if (!client.later(() -> renew(lease), interval)) {
            lease.lose(); // the client closed
        }
    }

    /** The watchdog's tick: renew, or declare the lock lost. */
    private void renew(Lease lease) {
        long deadline;
        synchronized (lease) {
            if (lease.count == 0 || lease.lost.isDone()) {
                return; // released or lost: the watchdog stops
            }
            deadline = lease.deadlineNanos;
        }
        long sent = nanoClock.getAsLong();
        if (sent - deadline >= 0) {
            lease.lose(); // no renewal got through within the lease: the servers may have let it go
            return;
        }
        WriteOp op = WriteOp.newBuilder().setType(WriteOpType.LOCK_RENEW).setKey(lease.key).setHolder(holder)
                .setToken(lease.token).setLeaseMs(lease.leaseMs).build();
        client.coordOp(op, deadline).whenComplete((answer, err) -> {
            if (err == null && !answer.succeeded()) {
                lease.lose();
                return;
            }
            if (err == null) {
                synchronized (lease) {
                    long renewed = sent + lease.leaseMs * 1_000_000L;
                    if (renewed - lease.deadlineNanos > 0) {
                        lease.deadlineNanos = renewed;
                    }
                }
            }
            // a failed renewal is tried again at the next tick, until the deadline
            scheduleRenewal(lease);
        });
    }

    /** Gives one acquisition of {@code lease} up. */
    CompletableFuture<Void> release(Lease lease) {
        if (!lease.heldNow()) {
            return failed(ErrorCode.LOCK_NOT_HELD, "lock " + Keys.printable(lease.key.toByteArray())
                    + " was lost (token " + lease.token + ")");
        }
        synchronized (lease) {
            lease.count--;
            if (lease.count == 0) {
                leases.remove(lease.key, lease); // the watchdog stops at its next tick, whatever the answer
            }
        }
        WriteOp op = WriteOp.newBuilder().setType(WriteOpType.LOCK_RELEASE).setKey(lease.key).setHolder(holder)
                .setToken(lease.token).build();
        return client.coordOp(op, client.deadline()).thenApply(answer -> {
            if (!answer.succeeded()) {
                lease.lose();
                throw new KvException(ErrorCode.LOCK_NOT_HELD, "lock " + Keys.printable(lease.key.toByteArray())
                        + " is not held by this client under token " + lease.token);
            }
            return null;
        });
    }

    private static <T> CompletableFuture<T> failed(ErrorCode code, String why) {
        return CompletableFuture.failedFuture(new KvException(code, why));
    }
}
