package io.kvraft.server;

import io.kvraft.client.KvClient;
import io.kvraft.server.config.ServerConfig.BalanceConfig;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Node heartbeats (raft.nodeHeartbeats, on by default) with this suite's timings: a 2 s election timeout and 200 ms
 * heartbeats, so a quiet region's jraft heartbeats go every 6 s, three election timeouts apart. Only the node
 * heartbeats' guards keep such a region's leader then; these tests fail if the guards let a follower campaign while its
 * leader's node lives, or keep one from campaigning when it died. The balancer is off: no leader moves but the tests'.
 */
@Timeout(240)
class NodeHeartbeatsClusterTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @BeforeEach
    void start() throws Exception {
        cluster = InProcessCluster.start(3, 6, dir, "memory", RaftConfig.LOG_SHARED,
                c -> c.withBalance(new BalanceConfig(false, 200, 600)));
        await().atMost(60, SECONDS).until(cluster::allRegionsLed);
    }

    @AfterEach
    void stop(TestInfo info) {
        if (cluster != null) {
            System.out.println(info.getDisplayName() + " final state:\n" + cluster.describe());
            cluster.close();
        }
    }

    private Map<Integer, Long> terms() {
        Map<Integer, Long> terms = new TreeMap<>();
        for (Region r : cluster.node(0).host().regions()) {
            terms.put(r.id(), cluster.term(r.id()));
        }
        return terms;
    }

    /**
     * Waits (at most 90 s) for {@code seconds} in a row in which no region's term moved and every region was led, and
     * returns the terms then. A lone election on a loaded machine only restarts the count; regions whose followers did
     * not hear their leaders (no node heartbeats, jraft's own far apart) elect every few seconds and never get there.
     */
    private Map<Integer, Long> awaitQuiet(int seconds) {
        Map<Integer, Long>[] seen = new Map[] {terms()};
        long[] since = {System.nanoTime()};
        await().atMost(seconds + 90, SECONDS).pollInterval(Duration.ofMillis(200)).until(() -> {
            Map<Integer, Long> now = terms();
            if (!now.equals(seen[0]) || !cluster.allRegionsLed()) {
                seen[0] = now;
                since[0] = System.nanoTime();
                return false;
            }
            return System.nanoTime() - since[0] >= SECONDS.toNanos(seconds);
        });
        return seen[0];
    }

    /** Idle regions keep their leaders over many election timeouts; a leader's node that stops is replaced. */
    @Test
    void when_regionsStayIdle_then_noLeaderChangesOverManyElectionTimeouts_andWhenALeadersNodeStops_newLeadersAreElected() {
        // 15 s: seven election timeouts, two quiet jraft heartbeat intervals
        Map<Integer, Long> quiet = awaitQuiet(15);
        int region = quiet.keySet().iterator().next();
        int leader = cluster.leaderOf(region);

        cluster.stopNode(leader);

        cluster.awaitNewTerm(region, quiet.get(region));
        assertThat(cluster.leaderOf(region)).isNotEqualTo(leader);
    }

    @Test
    void when_aNodeRestarts_then_itsReplicasFollowAndRegionsLedElsewhereKeepTheirLeaders() throws Exception {
        int restarted = 2;
        cluster.stopNode(restarted);
        await().atMost(60, SECONDS).until(cluster::allRegionsLed);
        KvClient client = cluster.client();
        for (int i = 0; i < 50; i++) {
            client.put(key(i), key(i)).get(30, SECONDS); // written while the node is down
        }
        Map<Integer, Long> quiet = awaitQuiet(7); // the survivors lead every region, quietly

        cluster.startNode(restarted);

        // its replicas learn their leaders (a node heartbeat they cannot answer makes the leader send jraft's)
        await().atMost(60, SECONDS).until(() -> cluster.node(restarted).host().regions().stream()
                .allMatch(r -> !r.leaderHint().isEmpty()));
        // and catch up what was written while it was down
        await().atMost(60, SECONDS).until(() -> {
            for (int i = 0; i < 50; i++) {
                if (cluster.node(restarted).store().get(key(i)) == null) {
                    return false;
                }
            }
            return true;
        });
        // and no pre-vote of theirs unseated a leader the others still hear, even with jraft's heartbeats far apart
        await().during(Duration.ofSeconds(7)).atMost(Duration.ofSeconds(20)).until(() -> terms().equals(quiet));
        assertThat(terms()).isEqualTo(quiet);
    }

    private static byte[] key(int i) {
        return ("node-beats-" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
}
