package io.kvraft.server.cli;

import com.alipay.sofa.jraft.entity.PeerId;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvraft.client.cli.KvCtl;
import io.kvraft.server.InProcessCluster;
import io.kvraft.server.config.ServerConfig.BalanceConfig;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The admin CLI ({@link KvCtl#run}, what {@code kv-client.jar} runs) against three in-process servers:
 * put/get/delete, regions, transfer-leader and rebalance, with their exit codes (0 ok, 1 failed or
 * absent, 2 usage, 3 no server) and output. The nodes' balancer is off, so leaders stay where the CLI puts them.
 */
class AdminCliTest {

    private static final int REGIONS = 6;

    @TempDir
    static Path dir;

    static InProcessCluster cluster;

    private record Run(int code, String out, String err) {
    }

    @BeforeAll
    static void start() throws Exception {
        cluster = InProcessCluster.start(3, REGIONS, dir, "memory", RaftConfig.LOG_SHARED,
                c -> c.withBalance(new BalanceConfig(false, null, null)));
        await().atMost(120, SECONDS).until(cluster::allRegionsLed);
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static Run cli(String... args) {
        List<String> a = new ArrayList<>(List.of("--servers", String.join(",", cluster.endpoints())));
        a.addAll(List.of(args));
        return cliRaw(a.toArray(String[]::new));
    }

    private static Run cliRaw(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = KvCtl.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
        return new Run(code, out.toString(), err.toString());
    }

    private static Region region(int node, int id) {
        return cluster.node(node).host().region(id);
    }

    /** The index of the node that leads region {@code id} now, or -1. */
    private static int leaderOf(int id) {
        for (int i = 0; i < cluster.size(); i++) {
            if (region(i, id).isLeader()) {
                return i;
            }
        }
        return -1;
    }

    /** Regions led by node 1, 2 and 3, as {@code regions --json} shows them. */
    private static List<Integer> leadersSeenByCli() throws Exception {
        Run json = cli("regions", "--json");
        assertThat(json.code()).as(json.err()).isZero();
        List<Integer> counts = new ArrayList<>(List.of(0, 0, 0));
        for (JsonNode row : new ObjectMapper().readTree(json.out())) {
            int node = cluster.endpoints().indexOf(row.get("leader").asText());
            if (node >= 0) {
                counts.set(node, counts.get(node) + 1);
            }
        }
        return counts;
    }

    @Test
    void when_aKeyIsPutReadAndDeleted_then_eachVerbAnswersWithItsExitCodeAndOutput() {
        assertThat(cli("put", "cli-key", "cli-value")).isEqualTo(new Run(0, "OK\n", ""));
        assertThat(cli("get", "cli-key")).isEqualTo(new Run(0, "cli-value\n", ""));
        assertThat(cli("delete", "cli-key")).isEqualTo(new Run(0, "deleted\n", ""));
        assertThat(cli("get", "cli-key")).isEqualTo(new Run(1, "", "error: key not found\n"));
        assertThat(cli("delete", "cli-key")).isEqualTo(new Run(0, "not found\n", ""));

        assertThat(cli("--hex", "put", "00ff01", "cafe").code()).isZero();
        assertThat(cli("--hex", "get", "00ff01")).isEqualTo(new Run(0, "cafe\n", ""));
        assertThat(cli("get", "\u0000\u00ff\u0001").code()).as("the hex key is bytes 00 ff 01, not that text").isEqualTo(1);
    }

    @Test
    void when_commandsComeOnStandardInput_then_batchRunsEachWithTheGlobalOptions_andAnswersTheFirstFailure() {
        String script = """
                # comments and blank lines are skipped

                put batch-key batch-value
                  get batch-key
                get batch-absent
                batch
                put 00ee bee5
                """;
        List<String> a = new ArrayList<>(List.of("--servers", String.join(",", cluster.endpoints()), "batch", "--status"));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = KvCtl.run(a.toArray(String[]::new), new java.io.ByteArrayInputStream(script.getBytes(StandardCharsets.UTF_8)),
                new PrintWriter(out, true), new PrintWriter(err, true));

        assertThat(code).as("the first failure: get of an absent key").isEqualTo(1);
        assertThat(out.toString()).isEqualTo("OK\n# exit 0\nbatch-value\n# exit 0\n# exit 1\n# exit 2\nOK\n# exit 0\n");
        assertThat(err.toString()).contains("key not found").contains("batch cannot run batch");
        assertThat(cli("get", "00ee")).as("--hex was not given, so the key is that text").isEqualTo(new Run(0, "bee5\n", ""));

        // --hex applies to every line, and --stop-on-error ends at the first failure
        a = new ArrayList<>(List.of("--servers", String.join(",", cluster.endpoints()), "--hex", "batch", "--stop-on-error"));
        code = KvCtl.run(a.toArray(String[]::new), new java.io.ByteArrayInputStream("put 6261746368 01\nget zz\nput 01 02\n"
                .getBytes(StandardCharsets.UTF_8)), new PrintWriter(out = new StringWriter(), true), new PrintWriter(new StringWriter(), true));
        assertThat(code).as("zz is not hex").isEqualTo(2);
        assertThat(out.toString()).as("only the first put ran").isEqualTo("OK\n");
        assertThat(cli("get", "batch")).as("its key was hex").isEqualTo(new Run(0, "\u0001\n", ""));
        assertThat(cli("--hex", "get", "01").code()).isEqualTo(1);
    }

    @Test
    void when_usageIsWrong_then_2_and_whenNoServerAnswers_then_3() {
        Run missingValue = cli("put", "only-a-key");
        assertThat(missingValue.code()).isEqualTo(2);
        assertThat(missingValue.err()).contains("VALUE");
        assertThat(cli("frobnicate").code()).isEqualTo(2);
        assertThat(cli("--hex", "get", "zz").code()).as("not hex").isEqualTo(2);

        Run down = cliRaw("--servers", "127.0.0.1:" + InProcessCluster.freePort(), "get", "k");
        assertThat(down.code()).as(down.err()).isEqualTo(3);
        assertThat(down.err()).startsWith("error: ").hasLineCount(1);
        assertThat(down.out()).isEmpty();
    }

    @Test
    void when_regionsIsAsked_then_everyRegionIsListedWithItsLeader_asTextAndJson() throws Exception {
        await().atMost(60, SECONDS).until(cluster::allRegionsLed);
        Run text = cli("regions");
        assertThat(text.code()).as(text.err()).isZero();
        List<String> lines = text.out().lines().toList();
        assertThat(lines).hasSize(REGIONS + 1);
        assertThat(lines.get(0)).startsWith("ID").contains("LEADER", "PEERS");
        assertThat(lines.get(1)).startsWith("1 ").contains("-inf");
        assertThat(lines.get(REGIONS)).startsWith(REGIONS + " ").contains("+inf");

        Run json = cli("regions", "--json");
        assertThat(json.code()).as(json.err()).isZero();
        JsonNode rows = new ObjectMapper().readTree(json.out());
        assertThat(rows).hasSize(REGIONS);
        Set<Integer> ids = new HashSet<>();
        for (JsonNode row : rows) {
            int id = row.get("id").asInt();
            ids.add(id);
            assertThat(row.get("peers")).hasSize(3);
            assertThat(row.get("leader").asText()).as("region %d", id).isEqualTo(cluster.endpoints().get(leaderOf(id)));
        }
        assertThat(ids).containsExactlyInAnyOrder(1, 2, 3, 4, 5, 6);
    }

    @Test
    void when_transferLeaderIsAsked_then_theTargetLeadsTheRegion_andBadRequestsExit1() {
        int id = 2;
        await().atMost(60, SECONDS).until(() -> leaderOf(id) >= 0);
        int from = leaderOf(id);
        String target = cluster.endpoints().get((from + 1) % 3);
        Run moved = cli("transfer-leader", String.valueOf(id), target);
        assertThat(moved).isEqualTo(new Run(0, "region " + id + ": leadership transfer to " + target + " started\n", ""));
        await().atMost(60, SECONDS).until(() -> region((from + 1) % 3, id).isLeader());

        Run notAPeer = cli("transfer-leader", String.valueOf(id), "127.0.0.1:1");
        assertThat(notAPeer.code()).isEqualTo(1);
        assertThat(notAPeer.err()).startsWith("error: ").contains("is not a peer of region " + id).hasLineCount(1);

        Run noRegion = cli("transfer-leader", "99", target);
        assertThat(noRegion.code()).isEqualTo(1);
        assertThat(noRegion.err()).contains("no region 99");

        assertThat(cli("transfer-leader", "two", target).code()).as("not a number").isEqualTo(2);
    }

    @Test
    void when_oneNodeLeadsEverything_then_rebalanceSpreadsTheLeaders() {
        String first = cluster.endpoints().get(0);
        // every region to node 1, as a restart of the other two might leave it
        for (int id = 1; id <= REGIONS; id++) {
            int region = id;
            await().atMost(60, SECONDS).until(() -> leaderOf(region) >= 0);
            int leader = leaderOf(region);
            if (leader != 0) {
                assertThat(region(leader, region).node().transferLeadershipTo(PeerId.parsePeer(first)).isOk()).isTrue();
                await().atMost(60, SECONDS).until(() -> region(0, region).isLeader());
            }
        }
        await().atMost(60, SECONDS).until(() -> leadersSeenByCli().equals(List.of(REGIONS, 0, 0)));

        Run r = cli("rebalance");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains(first + " -> ").endsWith("4 leadership transfers started\n");
        await().atMost(60, SECONDS).until(() -> leadersSeenByCli().equals(List.of(2, 2, 2)));

        assertThat(cli("rebalance")).isEqualTo(new Run(0, "balanced already\n", ""));
    }
}
