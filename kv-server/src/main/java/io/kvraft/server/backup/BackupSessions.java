package io.kvraft.server.backup;

import io.kvraft.server.store.RangeCapture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.security.SecureRandom;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The backup sessions a node holds: each a region's capture, read page by page by one client. A session
 * nobody has read for {@code idleTimeoutMs} is closed by {@link #expireIdle}, so a killed client pins
 * nothing for long. Ids start at a random number, so a client of a restarted node gets SESSION_NOT_FOUND,
 * never another session's data.
 */
public final class BackupSessions implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(BackupSessions.class);

    /** One region's capture and when it was last used. */
    public static final class Session {
        private final long id;
        private final int regionId;
        private final RangeCapture capture;
        private volatile long lastUsedNanos;

        Session(long id, int regionId, RangeCapture capture, long nowNanos) {
            this.id = id;
            this.regionId = regionId;
            this.capture = capture;
            this.lastUsedNanos = nowNanos;
        }

        public long id() {
            return id;
        }

        public int regionId() {
            return regionId;
        }

        public RangeCapture capture() {
            return capture;
        }
    }

    private final Map<Long, Session> sessions = new ConcurrentHashMap<>();
    private final AtomicLong nextId = new AtomicLong(new SecureRandom().nextLong() >>> 2);
    private final LongSupplier clockNanos;
    private final long idleTimeoutNanos;
    private final int maxSessions;
    private volatile boolean closed;

    /** @param clockNanos a monotonic clock ({@code System::nanoTime}; tests pass a fake one) */
    public BackupSessions(LongSupplier clockNanos, long idleTimeoutMs, int maxSessions) {
        this.clockNanos = clockNanos;
        this.idleTimeoutNanos = idleTimeoutMs * 1_000_000L;
        this.maxSessions = maxSessions;
    }

    /** Whether another session may open now. */
    public boolean hasRoom() {
        return !closed && sessions.size() < maxSessions;
    }

    /** Holds {@code capture} as a new session; closes it and returns null when the sessions are closed. */
    public Session open(int regionId, RangeCapture capture) {
        Session s = new Session(nextId.incrementAndGet(), regionId, capture, clockNanos.getAsLong());
        sessions.put(s.id, s);
        if (closed) { // close() may have run between the check and the put
            close(s.id);
            return null;
        }
        return s;
    }

    /** The session, marked as used now; null when unknown (ended, expired, or from before a restart). */
    public Session get(long id) {
        Session s = sessions.get(id);
        if (s != null) {
            s.lastUsedNanos = clockNanos.getAsLong();
        }
        return s;
    }

    /** Ends a session and frees its capture; unknown ids are ignored. */
    public void close(long id) {
        Session s = sessions.remove(id);
        if (s != null) {
            s.capture.close();
        }
    }

    /** Closes the sessions idle for longer than the timeout; returns how many. */
    public int expireIdle() {
        long now = clockNanos.getAsLong();
        int expired = 0;
        for (Session s : List.copyOf(sessions.values())) {
            if (now - s.lastUsedNanos > idleTimeoutNanos) {
                close(s.id);
                expired++;
                LOG.info("backup session {} of region {} expired after {} ms unused", s.id, s.regionId,
                        idleTimeoutNanos / 1_000_000);
            }
        }
        return expired;
    }

    /** The ids of the sessions held now. */
    public List<Long> ids() {
        return List.copyOf(sessions.keySet());
    }

    public int size() {
        return sessions.size();
    }

    /** Closes every session (before the store closes) and refuses new ones. */
    @Override
    public void close() {
        closed = true;
        for (Long id : List.copyOf(sessions.keySet())) {
            close(id);
        }
    }
}
