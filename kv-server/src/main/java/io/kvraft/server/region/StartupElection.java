package io.kvraft.server.region;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.option.RaftOptions;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A replica's election timeouts around its region's first leader: a new region's replica may campaign sooner than
 * the configured timeout ({@link #campaignFirst}), a forced recovery's survivors too ({@link #campaignSoon}); once the
 * replica knows a leader (it leads or follows), the configured timeout and jraft's random delay hold again.
 */
final class StartupElection {

    /** Sets the configured election timeout again (the node's part: it knows the configured value). */
    private final Runnable onLeaderKnown;
    /** A first campaign's election timeout and random delay ({@link #campaignFirst}); 0 = the options' own. */
    private int firstCampaignMs;
    private int firstCampaignDelayMs;
    /** jraft's delay to restore once the region has a leader, when this replica campaigned first; 0 = none. */
    private int normalElectionDelayMs;
    /** Orders setting the first campaign's timeout against the region's first leader (which ends it). */
    private final Object lock = new Object();
    private final AtomicBoolean cleared = new AtomicBoolean();

    StartupElection(Runnable onLeaderKnown) {
        this.onLeaderKnown = onLeaderKnown;
    }

    /**
     * Makes the replica campaign after {@code timeoutMs} plus a random 0 to {@code delayMs}, until the region first has
     * a leader. Set before the group starts, applied once it has ({@link #started}), because jraft fixes at start the
     * heartbeat interval and the read-index scanner's period from the options' values, and short ones there would last
     * as long as the group.
     */
    void campaignFirst(int timeoutMs, int delayMs) {
        this.firstCampaignMs = timeoutMs;
        this.firstCampaignDelayMs = delayMs;
    }

    /** The group started: a first campaign's timeout goes on, unless a leader is known already. */
    void started(Node node) {
        synchronized (lock) {
            // not when a leader is known already (another replica's TimeoutNow can come as the group starts)
            if (firstCampaignMs > 0 && !cleared.get()) {
                RaftOptions raftOptions = node.getOptions().getRaftOptions();
                normalElectionDelayMs = raftOptions.getMaxElectionDelayMs();
                raftOptions.setMaxElectionDelayMs(firstCampaignDelayMs); // jraft reads it at each timer's next round
                node.resetElectionTimeoutMs(firstCampaignMs); // the heartbeat interval stays: replicators keep theirs
            }
        }
    }

    /**
     * After a forced recovery's {@code resetPeers}: the replica campaigns after {@code timeoutMs} (the start-up election
     * timeout) rather than the configured one, so the survivors lead within 2-3 s, not 5-10 s; it takes the configured
     * one back once it leads or follows, as after its start.
     */
    void campaignSoon(Node node, int timeoutMs) {
        synchronized (lock) {
            if (node != null && timeoutMs < node.getOptions().getElectionTimeoutMs()) {
                cleared.set(false);
                node.resetElectionTimeoutMs(timeoutMs);
            }
        }
    }

    /** The replica leads or follows a leader: the configured timeout and delay, once. */
    void leaderKnown(Node node) {
        if (cleared.compareAndSet(false, true)) {
            synchronized (lock) {
                if (normalElectionDelayMs > 0 && node != null) {
                    node.getOptions().getRaftOptions().setMaxElectionDelayMs(normalElectionDelayMs);
                }
            }
            onLeaderKnown.run(); // the configured election timeout, after the first campaign's one if it was set
        }
    }
}
