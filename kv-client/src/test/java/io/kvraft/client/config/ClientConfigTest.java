package io.kvraft.client.config;

import io.kvraft.common.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ClientConfigTest {

    @TempDir
    Path dir;

    private Path write(String yaml) throws IOException {
        Path f = dir.resolve("client.yaml");
        Files.writeString(f, yaml);
        return f;
    }

    private static final String MINIMAL = "servers: [127.0.0.1:8181]\n";

    @Test
    void when_fileSetsEveryKey_then_everyValueIsBound() throws IOException {
        Path f = write("""
                # a comment
                servers: [10.0.0.1:8181, "node-2.example:8182", 10.0.0.3:8183]
                requestTimeoutMs: 1500
                operationTimeoutMs: 9000
                readMode: leader_lease
                batching:
                  enabled: false
                  maxBatchSize: 64
                  maxBatchBytes: 65536
                  maxInflightPerRegion: 3
                  maxPendingPerRegion: 777
                  readsWithWrites: false
                """);

        ClientConfig c = ClientConfig.load(f);

        assertThat(c.servers()).containsExactly("10.0.0.1:8181", "node-2.example:8182", "10.0.0.3:8183");
        assertThat(c.requestTimeoutMs()).isEqualTo(1500L);
        assertThat(c.operationTimeoutMs()).isEqualTo(9000L);
        assertThat(c.readMode()).isEqualTo("leader_lease");
        assertThat(c.batching()).isEqualTo(new ClientConfig.Batching(false, 64, 65536, 3, 777, false));
    }

    @Test
    void when_serversAreGivenAsABlockList_then_theyAreBound() throws IOException {
        ClientConfig c = ClientConfig.load(write("""
                servers:
                  - a:1
                  - b:2
                """));

        assertThat(c.servers()).containsExactly("a:1", "b:2");
    }

    @Test
    void when_optionalKeysAreAbsent_then_defaultsApply() throws IOException {
        ClientConfig c = ClientConfig.load(write(MINIMAL));

        assertThat(c.servers()).containsExactly("127.0.0.1:8181");
        assertThat(c.requestTimeoutMs()).isEqualTo(5_000L);
        assertThat(c.operationTimeoutMs()).isEqualTo(30_000L);
        assertThat(c.readMode()).isEqualTo("read_index");
        assertThat(c.batching().enabled()).isTrue();
        assertThat(c.batching().maxBatchSize()).isEqualTo(4096);
        assertThat(c.batching().maxBatchBytes()).isEqualTo(1 << 20);
        assertThat(c.batching().maxInflightPerRegion()).isEqualTo(1);
        assertThat(c.batching().maxPendingPerRegion()).isEqualTo(100_000);
        assertThat(c.batching().readsWithWrites()).isTrue();
    }

    @Test
    void when_batchingIsPartlyGiven_then_theRestOfItDefaults() throws IOException {
        ClientConfig c = ClientConfig.load(write(MINIMAL + """
                batching:
                  maxBatchSize: 8
                """));

        assertThat(c.batching()).isEqualTo(new ClientConfig.Batching(true, 8, 1 << 20, 1, 100_000, true));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            # yaml appended to a valid file                  | key path named in the message
            requestTimeout: 5                                | requestTimeout
            Servers: [a:1]                                   | Servers
            batching: {maxBatchSise: 10}                     | batching.maxBatchSise
            batching: {enabled: true, maxInFlightPerRegion: 1} | batching.maxInFlightPerRegion
            """)
    void when_aKeyIsUnknown_then_theErrorNamesTheFileAndTheKeyPath(String extra, String keyPath) throws IOException {
        Path f = write(MINIMAL + extra + "\n");

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(f.toString())
                .hasMessageContaining("unknown key '" + keyPath + "'");
    }

    @Test
    void when_aNestedKeyIsMisspeltInBlockStyle_then_theErrorNamesItsFullPathAndTheKnownKeys() throws IOException {
        Path f = write(MINIMAL + """
                batching:
                  enabled: true
                  maxBatchSise: 100
                """);

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith(f + ": ")
                .hasMessageContaining("'batching.maxBatchSise'")
                .hasMessageContaining("maxBatchSize")
                .hasMessageNotContaining("\n");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            # yaml appended to a valid file | key path named in the message
            requestTimeoutMs: abc           | requestTimeoutMs
            operationTimeoutMs: [1, 2]      | operationTimeoutMs
            batching: {enabled: maybe}      | batching.enabled
            batching: {maxBatchSize: 1.5x}  | batching.maxBatchSize
            batching: 12                    | batching
            """)
    void when_aValueHasTheWrongType_then_theErrorNamesTheFileAndTheKey(String extra, String keyPath) throws IOException {
        Path f = write(MINIMAL + extra + "\n");

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(f.toString())
                .hasMessageContaining("key '" + keyPath + "'")
                .hasMessageNotContaining("\n");
    }

    @Test
    void when_serversIsAScalarInsteadOfAList_then_theErrorNamesServers() throws IOException {
        Path f = write("servers: 127.0.0.1:8181\n");

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(f.toString())
                .hasMessageContaining("'servers'");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {
            "servers: [a:1\nrequestTimeoutMs: 5\n",
            "servers: [a:1]\n  requestTimeoutMs: 5\n bad: indentation\n",
            "servers: [a:1]\nbatching:\n\tenabled: true\n",
            "servers: \"a:1\n",
            "- just\n- a list\n",
    })
    void when_theYamlIsMalformed_then_theErrorNamesTheFile(String yaml) throws IOException {
        Path f = write(yaml);

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith(f + ": ")
                .hasMessageNotContaining("\n");
    }

    @Test
    void when_yamlSyntaxIsBrokenAtTopLevel_then_theErrorSaysMalformedAndGivesTheLine() throws IOException {
        Path f = write("servers: [a:1]\nrequestTimeoutMs: 5\nreadMode: \"read_index\n");

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith(f + ": malformed YAML")
                .hasMessageContaining("at line");
    }

    @Test
    void when_yamlSyntaxIsBrokenInsideASection_then_theErrorSaysMalformedAndGivesTheLine() throws IOException {
        Path f = write("servers: [a:1]\nrequestTimeoutMs: 5\nbatching: {enabled: true\n");

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith(f + ": malformed YAML")
                .hasMessageContaining("at line 3")
                .hasMessageNotContaining("\n");
    }

    @Test
    void when_theFileHoldsOnlyComments_then_itIsRejectedNamingTheFile() throws IOException {
        Path f = write("# servers: [a:1]\n");

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith(f + ": ");
    }

    @Test
    void when_aKeyIsGivenTwice_then_theFileIsRejected() throws IOException {
        Path f = write(MINIMAL + "requestTimeoutMs: 100\nrequestTimeoutMs: 200\n");

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(f.toString())
                .hasMessageContaining("requestTimeoutMs");
    }

    @Test
    void when_theFileIsMissing_then_theErrorNamesIt() {
        Path f = dir.resolve("nope.yaml");

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessage(f + ": no such file");
    }

    @ParameterizedTest(name = "[{0}]")
    @ValueSource(strings = {"servers: []\n", "requestTimeoutMs: 100\n", "", "  \n", "servers:\n"})
    void when_noServerIsGiven_then_theErrorNamesServers(String yaml) throws IOException {
        Path f = write(yaml);

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(f.toString())
                .hasMessageContaining("'servers'");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"localhost", "localhost:", ":8181", "localhost:http", "localhost:0", "localhost:65536", "localhost:-1"})
    void when_aServerIsNotHostColonPort_then_theErrorNamesTheFileAndTheValue(String server) throws IOException {
        Path f = write("servers: [\"127.0.0.1:8181\", \"" + server + "\"]\n");

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(f.toString())
                .hasMessageContaining("'" + server + "'");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            # yaml appended to a valid file               | words of the message
            requestTimeoutMs: 0                           | requestTimeoutMs must be positive
            operationTimeoutMs: 1000                      | operationTimeoutMs (1000) must be at least requestTimeoutMs (5000)
            readMode: eventual                            | readMode must be one of read_index, leader_lease, follower, stale
            batching: {maxBatchSize: 0}                   | batching limits must be positive
            batching: {maxPendingPerRegion: -5}           | batching limits must be positive
            """)
    void when_aValueIsOutOfRange_then_theErrorNamesTheFileAndTheRule(String extra, String words) throws IOException {
        Path f = write(MINIMAL + extra + "\n");

        assertThatThrownBy(() -> ClientConfig.load(f))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(f.toString())
                .hasMessageContaining(words);
    }

    @Test
    void when_configIsBuiltInCode_then_defaultsApplyAndWithersKeepTheRest() {
        ClientConfig c = ClientConfig.of(List.of("a:1"));

        ClientConfig changed = c.withServers(List.of("b:2")).withReadMode("leader_lease")
                .withBatching(c.batching().withEnabled(false));

        assertThat(changed.servers()).containsExactly("b:2");
        assertThat(changed.readMode()).isEqualTo("leader_lease");
        assertThat(changed.batching().enabled()).isFalse();
        assertThat(changed.batching().maxBatchSize()).isEqualTo(4096);
        assertThat(changed.requestTimeoutMs()).isEqualTo(c.requestTimeoutMs());
    }

    @Test
    void when_theShippedClientYamlIsRead_then_itLoads() {
        Path shipped = Path.of("..", "conf", "client.yaml");
        assertThat(shipped).as("the shipped conf/client.yaml (moved?)").isRegularFile();

        ClientConfig c = ClientConfig.load(shipped);

        assertThat(c.servers()).isNotEmpty();
    }
}
