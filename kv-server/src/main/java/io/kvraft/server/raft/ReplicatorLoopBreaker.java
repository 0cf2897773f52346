package io.kvraft.server.raft;

import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.core.Replicator.ReplicatorStateListener;
import com.alipay.sofa.jraft.entity.PeerId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Breaks a replication livelock in jraft 1.3.15 (1.4.0 has the same code) that stalls a follower until the
 * leader happens to take its next snapshot.
 *
 * <p>It happens when the leadership moves while a follower installs a snapshot from the old leader and the
 * new leader's own snapshot is older. The new leader's replicator backs its next index down below the
 * follower's snapshot and installs its older snapshot; the follower answers "not newer" with success, the
 * leader resumes at its own snapshot index + 1, the follower rejects that append (jraft's follower knows no
 * term for an index below its snapshot), the leader backs down again, and so on, hundreds of times a second,
 * until the leader takes a snapshot at or beyond the follower's. With {@code raft.snapshotIntervalSecs} at 600
 * that is up to ten minutes in which the follower applies nothing.
 *
 * <p>Each round trip changes the leader's replicator state, which never happens at that rate otherwise (a down
 * follower stays in probe; a follower with a diverged log is probed back without changing state). Depending on
 * where the follower's rejection sends it, the replicator goes probe, snapshot, replicate (OFFLINE, ONLINE) or
 * only snapshot, replicate (ONLINE, ONLINE: jraft reports every change, and both map to ONLINE), so every
 * change counts. When one peer changes state {@link #FLIPS} times within {@link #WINDOW_MS}, the leader takes a
 * snapshot: its applied index is at least the commit index the follower's snapshot came from, so the next
 * install either succeeds or is "not newer" with a next index the follower accepts.
 */
public final class ReplicatorLoopBreaker implements ReplicatorStateListener {

    private static final Logger LOG = LoggerFactory.getLogger(ReplicatorLoopBreaker.class);
    static final int FLIPS = 20;
    static final long WINDOW_MS = 2_000;
    /** At most one snapshot per region this often on this account, whatever the followers do. */
    static final long COOLDOWN_MS = 10_000;

    private final int regionId;
    private final Runnable snapshot;
    private final LongSupplier clockMs;
    private final Map<PeerId, Window> windows = new ConcurrentHashMap<>();
    private long lastSnapshotMs = Long.MIN_VALUE / 2;

    public ReplicatorLoopBreaker(int regionId, Runnable snapshot, LongSupplier clockMs) {
        this.regionId = regionId;
        this.snapshot = snapshot;
        this.clockMs = clockMs;
    }

    @Override
    public void stateChanged(PeerId peer, ReplicatorState state) {
        if (state != ReplicatorState.OFFLINE && state != ReplicatorState.ONLINE) {
            return;
        }
        long now = clockMs.getAsLong();
        Window w = windows.computeIfAbsent(peer, p -> new Window());
        int flips;
        synchronized (w) {
            if (now - w.startMs > WINDOW_MS) {
                w.startMs = now;
                w.count = 0;
            }
            flips = ++w.count;
        }
        if (flips < FLIPS) {
            return;
        }
        synchronized (this) {
            if (now - lastSnapshotMs < COOLDOWN_MS) {
                return;
            }
            lastSnapshotMs = now;
        }
        LOG.warn("region {}: replication to {} keeps falling back to probing or snapshots ({} state changes in {} ms), which is jraft's "
                + "loop when the follower holds a newer snapshot than ours: taking a snapshot to end it",
                regionId, peer, flips, WINDOW_MS);
        snapshot.run();
    }

    public static void snapshotDone(int regionId, Status status) {
        if (status.isOk()) {
            LOG.info("region {}: snapshot taken to end the replication loop", regionId);
        } else {
            LOG.warn("region {}: snapshot to end the replication loop failed: {}", regionId, status);
        }
    }

    @Override
    public void onCreated(PeerId peer) {
    }

    @Override
    public void onError(PeerId peer, Status status) {
    }

    @Override
    public void onDestroyed(PeerId peer) {
        windows.remove(peer);
    }

    private static final class Window {
        long startMs = Long.MIN_VALUE / 2;
        int count;
    }
}
