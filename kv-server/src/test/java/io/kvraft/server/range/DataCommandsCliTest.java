package io.kvraft.server.range;

import io.kvraft.client.KvClient;
import io.kvraft.client.cli.KvCtl;
import io.kvraft.server.InProcessCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

/** The CLI's range and read-modify-write verbs through its real entry point, against three in-process servers. */
@Timeout(value = 180, unit = SECONDS)
class DataCommandsCliTest {

    @TempDir
    static Path dir;

    static InProcessCluster cluster;
    static KvClient client;

    @BeforeAll
    static void start() throws Exception {
        cluster = InProcessCluster.start(3, 24, dir, "memory");
        cluster.awaitBalanced(60);
        client = cluster.client();
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @BeforeEach
    void empty() {
        sync(client.deleteRange(null, null));
    }

    record Run(int code, String out, String err) {
    }

    static Run cli(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        String[] all = new String[args.length + 2];
        all[0] = "--servers";
        all[1] = String.join(",", cluster.endpoints());
        System.arraycopy(args, 0, all, 2, args.length);
        int code = KvCtl.run(all, new PrintWriter(out, true), new PrintWriter(err, true));
        return new Run(code, out.toString(), err.toString());
    }

    static void put(String k, String v) {
        sync(client.put(k.getBytes(StandardCharsets.UTF_8), v.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void when_scanned_then_pairsPrintInOrderWithinBoundsAndLimit() {
        // 'a'..'e' and a key in a far region (UTF-8 c3 b0), so the scan crosses regions
        for (String k : new String[] {"a", "b", "c", "d", "e"}) {
            put(k, "v" + k);
        }
        put("\u00f0", "far");

        Run all = cli("scan", "");
        Run bounded = cli("scan", "b", "d");
        Run reverseTwo = cli("scan", "", "--reverse", "--limit", "2", "--keys-only");
        Run json = cli("scan", "a", "c", "--json");

        assertThat(all.code()).isZero();
        assertThat(all.out().lines()).containsExactly("a\tva", "b\tvb", "c\tvc", "d\tvd", "e\tve", "\u00f0\tfar");
        assertThat(bounded.out().lines()).containsExactly("b\tvb", "c\tvc");
        assertThat(reverseTwo.out().lines()).containsExactly("\u00f0", "e");
        assertThat(json.out().trim()).isEqualTo("[{\"key\":\"a\",\"value\":\"va\"},{\"key\":\"b\",\"value\":\"vb\"}]");
    }

    @Test
    void when_scanArgumentsAreBad_then_exitTwoWithOneLine() {
        Run badLimit = cli("scan", "", "--limit", "0");
        Run badMode = cli("scan", "", "--read-mode", "eventually");
        Run startAboveEnd = cli("scan", "z", "a");

        assertThat(badLimit.code()).isEqualTo(2);
        assertThat(badLimit.err()).contains("--limit");
        assertThat(badMode.code()).isEqualTo(2);
        assertThat(badMode.err()).contains("read_index, leader_lease, follower, stale");
        assertThat(startAboveEnd.code()).isEqualTo(1);
        assertThat(startAboveEnd.err()).startsWith("error: INVALID_ARGUMENT");
    }

    @Test
    void when_deleteRangeRuns_then_onlyItsKeysGoAndTheWholeStoreNeedsYes() {
        for (String k : new String[] {"a", "b", "c"}) {
            put(k, "v");
        }

        Run part = cli("delete-range", "a", "c");
        Run refused = cli("delete-range", "", "");

        assertThat(part.code()).isZero();
        assertThat(cli("scan", "", "--keys-only").out().lines()).containsExactly("c");
        assertThat(refused.code()).isEqualTo(2);
        assertThat(refused.err()).contains("--yes");
        assertThat(cli("scan", "", "--keys-only").out().lines()).containsExactly("c");
        assertThat(cli("delete-range", "", "", "--yes").code()).isZero();
        assertThat(cli("scan", "").out()).isEmpty();
    }

    @Test
    void when_casAndPutIfAbsentRun_then_exitCodesSayWhetherTheyTookEffect() {
        Run first = cli("put-if-absent", "k", "one");
        Run second = cli("put-if-absent", "k", "two");
        Run wrongCas = cli("cas", "k", "nope", "three");
        Run rightCas = cli("cas", "k", "one", "three");
        Run absentCas = cli("cas", "new", "fresh", "--expect-absent");

        assertThat(first.code()).isZero();
        assertThat(second.code()).isEqualTo(1);
        assertThat(second.out().trim()).isEqualTo("one");
        assertThat(wrongCas.code()).isEqualTo(1);
        assertThat(wrongCas.err()).contains("not swapped");
        assertThat(rightCas.code()).isZero();
        assertThat(absentCas.code()).isZero();
        assertThat(cli("get", "k").out().trim()).isEqualTo("three");
        assertThat(cli("get", "new", "--read-mode", "follower").out().trim()).isEqualTo("fresh");
        assertThat(cli("--hex", "get", "6b").out().trim()).isEqualTo("7468726565"); // "three"
    }

    @Test
    void when_appendRuns_then_theValueGrowsByEachPart() {
        Run first = cli("append", "log", "a");
        Run second = cli("append", "log", "bc");

        assertThat(first.code()).isZero();
        assertThat(first.out().trim()).isEqualTo("OK");
        assertThat(second.code()).isZero();
        assertThat(cli("get", "log").out().trim()).isEqualTo("abc");
        assertThat(cli("append", "").code()).as("no value: usage").isEqualTo(2);
    }
}
