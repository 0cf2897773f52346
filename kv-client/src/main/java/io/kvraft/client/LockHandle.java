package io.kvraft.client;

import io.kvraft.common.KvException;
import java.util.concurrent.CompletableFuture;

/**
 * One acquisition of a distributed lock by a client (see {@link KvClient#tryLock}). While any acquisition of
 * the key by the client is held, a watchdog on the client renews the lease; the handle is held until it is
 * unlocked or the lock is lost.
 *
 * <p>Lost means the client can no longer be sure it holds the lock: a renewal was refused, or no renewal
 * succeeded within the lease (measured on this client's monotonic clock from the moment the last
 * successful acquire or renewal was sent, so it always ends before the servers' view of the lease does).
 * Work guarded by the lock must stop then, and anything it writes elsewhere should carry the
 * {@link #token() fencing token}, so the resource can refuse a late write from a holder whose lease ran out.
 */
public final class LockHandle implements AutoCloseable {

    private final ClientLocks locks;
    private final ClientLocks.Lease lease;
    private boolean unlocked; // guarded by lease

    LockHandle(ClientLocks locks, ClientLocks.Lease lease) {
        this.locks = locks;
        this.lease = lease;
    }

    /** The key locked. */
    public byte[] key() {
        return lease.key.toByteArray();
    }

    /**
     * The fencing token: strictly greater than the token of every earlier holding of this key, cluster-wide
     * (re-entrant acquisitions share their holding's token).
     */
    public long token() {
        return lease.token;
    }

    /** Whether this acquisition is still held: not unlocked, and the lock not lost. */
    public boolean isHeld() {
        synchronized (lease) {
            return !unlocked && lease.heldNow();
        }
    }

    /** Completes when the lock is lost (not when it is unlocked). */
    public CompletableFuture<Void> lost() {
        return lease.lost;
    }

    /**
     * Gives this acquisition up; the lock is free once every acquisition of the client is given up. Fails with
     * INVALID_ARGUMENT when the handle was unlocked already, LOCK_NOT_HELD when the lock was lost (its lease ran
     * out, or another holder has it now), and like any write it is not retried when its outcome is unknown
     * (TIMEOUT): the lease then runs out on its own.
     */
    public CompletableFuture<Void> unlock() {
        synchronized (lease) {
            if (unlocked) {
                return CompletableFuture.failedFuture(new KvException(
                        io.kvraft.common.ErrorCode.INVALID_ARGUMENT, "lock handle already unlocked"));
            }
            unlocked = true;
        }
        return locks.release(lease);
    }

    /** Unlocks, waiting for the answer; a lock already lost or unlocked is not an error here. */
    @Override
    public void close() {
        synchronized (lease) {
            if (unlocked) {
                return;
            }
        }
        try {
            KvClient.sync(unlock());
        } catch (KvException notHeld) {
            // lost meanwhile: nothing left to give up
        }
    }

    @Override
    public String toString() {
        return "LockHandle{" + Keys.printable(key()) + ", token " + lease.token + (isHeld() ? ", held}" : "}");
    }
}
