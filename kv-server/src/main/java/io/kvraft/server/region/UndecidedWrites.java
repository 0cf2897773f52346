package io.kvraft.server.region;

import io.kvraft.common.proto.KvProto.CoordResult;
import io.kvraft.common.proto.KvProto.Error;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Entries of one region that this node proposed as leader and whose leadership ended before they committed. jraft
 * fails their closures with "Leader stepped down", yet an entry that reached a majority (every entry in flight when the
 * leader hands over by a transfer does) still commits under the next leader. Answering those writes "outcome unknown"
 * made every leader move cost the clients errors; instead they wait here and are answered by their fate in the log,
 * as this node's replica (a follower now) applies it:
 * <ul>
 *   <li>applied: this node's state machine applies an entry of the same term with the same proposal id; the writes
 *       get their results as if this node still led;</li>
 *   <li>not applied: it applies an entry of a later term first. The log holds a term's entries before any later
 *       term's, so an entry of that term that is not applied by then never will be; the writes are answered
 *       NOT_LEADER, and the client retries them at the new leader;</li>
 *   <li>unknown: neither within one election timeout (no new leader wrote anything yet), or a snapshot replaced
 *       this node's log, or the region stopped: answered as before, an outcome the client cannot retry blindly.</li>
 * </ul>
 * An entry is known by (term, proposal id): only the leader of a term proposes entries of that term, and its ids are
 * distinct within its process, which holds the waiting closures. jraft runs the failed closures on another thread, so
 * this replica may apply such an entry before its closure arrives here: the state machine then leaves the entry's
 * results here ({@link #appliedEarly}) for the closure to take.
 */
final class UndecidedWrites {

    private static final Logger LOG = LoggerFactory.getLogger(UndecidedWrites.class);

    private record Key(long term, long proposalId) {
    }

    /** The writes of one entry, as they wait: answered once, one way or the other. */
    interface Write {
        /** The entry applied with these results. */
        void applied(Early results);

        /** The entry's writes get {@code err}. */
        void answer(Error err);
    }

    private record Waiting(Write closure, ScheduledFuture<?> expiry) {
    }

    /** The results of an entry this node proposed, applied before jraft handed back its closure. */
    record Early(boolean[] results, byte[][] previous, CoordResult[] coord,
                 boolean[] outOfRange) {
    }

    /** At most this many early results are kept (each is claimed within moments; a bound against leaks). */
    private static final int MAX_EARLY = 4096;

    private final int regionId;
    private final ScheduledExecutorService timer;
    private final long waitMs;
    /** The answer for writes whose entry did not make it into the log. */
    private final Supplier<Error> notApplied;
    /** The answer for writes whose fate could not be learnt, {@code why} they could not. */
    private final Function<String, Error> unknown;
    /** Guarded by this. */
    private final Map<Key, Waiting> waiting = new HashMap<>();
    /** Guarded by this. */
    private final Map<Key, Early> early = new HashMap<>();
    /** Whether {@link #waiting} may hold anything: read without the lock on every applied entry. */
    private volatile boolean any;
    /** The highest term of an entry the state machine applied; written only on its thread. */
    private volatile long appliedTerm;
    /**
     * Writes of this term or earlier can no longer learn their fate here (early results were dropped, or a snapshot
     * replaced the log): guarded by this.
     */
    private long uncertainThrough;
    /** Terms this node began to lead, the latest last (a few suffice: entries apply in term order). */
    private final long[] ledTerms = new long[4];

    UndecidedWrites(int regionId, ScheduledExecutorService timer, long waitMs, Supplier<Error> notApplied,
                    Function<String, Error> unknown) {
        this.regionId = regionId;
        this.timer = timer;
        this.waitMs = waitMs;
        this.notApplied = notApplied;
        this.unknown = unknown;
    }

    /** Keeps {@code closure}'s writes, proposed in {@code term}, until their entry's fate is known. */
    void park(Write closure, long term, long proposalId) {
        Key key = new Key(term, proposalId);
        Early applied;
        boolean uncertain;
        boolean lost;
        synchronized (this) {
            applied = early.remove(key);
            uncertain = term <= uncertainThrough;
            lost = appliedTerm > term; // a later term's entry applied, and this one did not before it
            if (applied == null && !uncertain && !lost) {
                try {
                    waiting.put(key, new Waiting(closure, timer.schedule(() -> expire(key), waitMs, TimeUnit.MILLISECONDS)));
                    any = true;
                    return;
                } catch (RejectedExecutionException stopping) {
                    // answered below as unknown
                }
            }
        }
        if (applied != null) {
            closure.applied(applied);
        } else if (uncertain) {
            closure.answer(unknown.apply("this replica can no longer tell"));
        } else if (lost) {
            closure.answer(notApplied.get());
        } else {
            closure.answer(unknown.apply("the node is stopping"));
        }
    }

    /** Called on the state machine thread when this node begins to lead {@code term}. */
    synchronized void leading(long term) {
        System.arraycopy(ledTerms, 1, ledTerms, 0, ledTerms.length - 1);
        ledTerms[ledTerms.length - 1] = term;
    }

    /**
     * Whether an entry of {@code term} applied without a closure is one this node proposed (it led that term), so
     * that a failed closure of it may still come: on the state machine thread.
     */
    boolean proposedHere(long term, long proposalId) {
        if (proposalId == 0) {
            return false;
        }
        for (long t : ledTerms) {
            if (t == term) {
                return true;
            }
        }
        return false;
    }

    /**
     * Hands the results of an entry this node proposed to its failed closure, or keeps them until it comes to wait.
     * The closure may have come since {@link #adopt} looked for it, before the entry applied: one lock decides between
     * the two, so results and closure never wait apart (the closure would be called lost by a later term's entry, and
     * the client would write again what was applied).
     */
    void appliedEarly(long term, long proposalId, Early results) {
        Key key = new Key(term, proposalId);
        Waiting parked;
        synchronized (this) {
            parked = waiting.remove(key);
            if (parked != null) {
                any = !waiting.isEmpty();
            } else {
                if (early.size() >= MAX_EARLY) {
                    early.clear();
                    uncertainThrough = Math.max(uncertainThrough, term);
                }
                early.put(key, results);
            }
        }
        if (parked != null) {
            LOG.info("region {}: a write of term {} came to wait while its entry applied; it gets the entry's results",
                    regionId, term);
            parked.expiry().cancel(false);
            parked.closure().applied(results);
        }
    }

    /**
     * Called on the state machine thread for every entry it applies (proposal id 0 for one with a closure of its own):
     * returns the waiting writes of that entry (applied now; the caller answers them), or null. Answers the waiting
     * writes of earlier terms: their entries never made it.
     */
    Write adopt(long entryTerm, long proposalId) {
        if (entryTerm > appliedTerm) {
            appliedTerm = entryTerm;
        }
        if (!any) {
            return null;
        }
        Waiting found;
        List<Waiting> lost = null;
        synchronized (this) {
            found = proposalId == 0 ? null : waiting.remove(new Key(entryTerm, proposalId));
            for (Iterator<Map.Entry<Key, Waiting>> it = waiting.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<Key, Waiting> e = it.next();
                if (e.getKey().term() < entryTerm) {
                    (lost == null ? lost = new ArrayList<>() : lost).add(e.getValue());
                    it.remove();
                }
            }
            any = !waiting.isEmpty();
        }
        if (lost != null) {
            LOG.info("region {}: {} entries proposed before term {} were not committed; their writes go again",
                    regionId, lost.size(), entryTerm);
            Error err = notApplied.get();
            for (Waiting w : lost) {
                w.expiry().cancel(false);
                w.closure().answer(err);
            }
        }
        if (found != null) {
            found.expiry().cancel(false);
            return found.closure();
        }
        return null;
    }

    /** Answers every waiting write with an unknown outcome: a snapshot replaced the log, or the region stops. */
    void giveUp(String why) {
        List<Waiting> all;
        synchronized (this) {
            early.clear();
            uncertainThrough = Math.max(uncertainThrough, Math.max(appliedTerm, ledTerms[ledTerms.length - 1]));
            all = new ArrayList<>(waiting.values());
            waiting.clear();
            any = false;
        }
        Error err = unknown.apply(why);
        for (Waiting w : all) {
            w.expiry().cancel(false);
            w.closure().answer(err);
        }
    }

    private void expire(Key key) {
        Waiting w;
        synchronized (this) {
            w = waiting.remove(key);
            any = !waiting.isEmpty();
        }
        if (w != null) {
            LOG.info("region {}: no entry of term {} or later applied within {} ms; the outcome of a write stays unknown",
                    regionId, key.term(), waitMs);
            w.closure().answer(unknown.apply("no later entry applied within " + waitMs + " ms"));
        }
    }
}
