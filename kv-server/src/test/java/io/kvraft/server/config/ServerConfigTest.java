package io.kvraft.server.config;

import io.kvraft.client.config.ClientConfig;
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

class ServerConfigTest {

    private static final Path SHIPPED = Path.of("..", "conf");

    private static final String BASE = """
            endpoint: 127.0.0.1:8182
            dataDir: data/node2
            cluster:
              peers: [127.0.0.1:8181, 127.0.0.1:8182, 127.0.0.1:8183]
            """;

    @TempDir
    Path dir;

    private Path write(String yaml) throws IOException {
        Path f = dir.resolve("server.yaml");
        Files.writeString(f, yaml);
        return f;
    }

    private ConfigException loadFails(String yaml) throws IOException {
        Path f = write(yaml);
        ConfigException e = (ConfigException) catchConfigException(f);
        assertThat(e.getMessage()).as("names the file").startsWith(f + ": ").doesNotContain("\n");
        return e;
    }

    private static Throwable catchConfigException(Path f) {
        Throwable t = org.assertj.core.api.Assertions.catchThrowable(() -> ServerConfig.load(f));
        assertThat(t).isInstanceOf(ConfigException.class);
        return t;
    }

    @Test
    void when_fileSetsEveryKey_then_everyValueIsBound() throws IOException {
        Path f = write("""
                endpoint: 10.0.0.2:9000
                dataDir: /var/lib/kv/node2
                cluster:
                  peers: [10.0.0.1:9000, 10.0.0.2:9000, 10.0.0.3:9000]
                  regionCount: 3
                  splitKeys: ["55", "aa"]
                store:
                  engine: rocksdb
                  blockCacheBytes: 1048576
                  writeBufferBytes: 2097152
                  compression: zstd
                  hashIndex: false
                raft:
                  electionTimeoutMs: 2000
                  startupElectionTimeoutMs: 800
                  electionHeartbeatFactor: 8
                  sync: false
                  snapshotIntervalSecs: 0
                  replicatorPipeline: false
                  maxReplicatorInflightMsgs: 16
                  maxProposalsInflight: 4
                  maxRequestsPerEntry: 100
                  disruptorBufferSize: 256
                  logStorage: per-region
                  nodeHeartbeats: false
                  readsRideWrites: false
                limits:
                  maxKeyBytes: 100
                  maxValueBytes: 0
                  maxBatchOps: 7
                balance:
                  enabled: false
                  intervalMs: 250
                  settleMs: 500
                """);

        ServerConfig c = ServerConfig.load(f);

        assertThat(c.endpoint()).isEqualTo("10.0.0.2:9000");
        assertThat(c.dataDir()).isEqualTo("/var/lib/kv/node2");
        assertThat(c.cluster().peers()).containsExactly("10.0.0.1:9000", "10.0.0.2:9000", "10.0.0.3:9000");
        assertThat(c.cluster().regionCount()).isEqualTo(3);
        assertThat(c.cluster().splitKeys()).containsExactly("55", "aa");
        assertThat(c.store()).isEqualTo(new StoreConfig("rocksdb", 1L << 20, 2L << 20, "zstd", false));
        assertThat(c.raft()).isEqualTo(new RaftConfig(2000, 800, 8, false, 0, false, 16, 4, 100, 256, "per-region", 2, false,
                false));
        assertThat(c.limits()).isEqualTo(new ServerConfig.LimitsConfig(100, 0, 7));
        assertThat(c.balance()).isEqualTo(new ServerConfig.BalanceConfig(false, 250, 500));
    }

    @Test
    void when_theMemoryStoreGoesWithoutItsHashIndex_then_theReportsSettingsLineSaysSo() throws IOException {
        ServerConfig without = ServerConfig.load(write(BASE + "store:\n  engine: memory\n  hashIndex: false\n"));
        ServerConfig with = ServerConfig.load(write(BASE));

        assertThat(without.store().hashIndex()).isFalse();
        assertThat(without.summary()).contains("store.engine=memory store.hashIndex=false raft.sync=true");
        assertThat(with.summary()).contains("store.engine=memory raft.sync=true").doesNotContain("hashIndex");
    }

    @Test
    void when_maxHeapFractionIsSet_then_itIsTakenAndAValueOutOfRangeIsRefusedWithTheKeyNamed() throws IOException {
        assertThat(ServerConfig.load(write(BASE)).store().maxHeapFraction()).isEqualTo(0.85);
        assertThat(ServerConfig.load(write(BASE + "store:\n  maxHeapFraction: 0.7\n")).store().maxHeapFraction())
                .isEqualTo(0.7);
        assertThat(ServerConfig.load(write(BASE + "store:\n  maxHeapFraction: 1\n")).store().maxHeapFraction())
                .isEqualTo(1.0);
        for (String bad : new String[]{"0", "1.5", "-0.2"}) {
            assertThat(loadFails(BASE + "store:\n  maxHeapFraction: " + bad + "\n"))
                    .as(bad).hasMessageContaining("store.maxHeapFraction must be above 0.1 and at most 1");
        }
    }

    @Test
    void when_minFreeDiskBytesIsSet_then_itIsTakenAndANegativeValueIsRefusedWithTheKeyNamed() throws IOException {
        assertThat(ServerConfig.load(write(BASE)).store().minFreeDiskBytes()).isEqualTo(256L << 20);
        assertThat(ServerConfig.load(write(BASE + "store:\n  minFreeDiskBytes: 0\n")).store().minFreeDiskBytes())
                .isZero();
        assertThat(ServerConfig.load(write(BASE + "store:\n  minFreeDiskBytes: 1073741824\n")).store()
                .minFreeDiskBytes()).isEqualTo(1L << 30);
        assertThat(loadFails(BASE + "store:\n  minFreeDiskBytes: -1\n"))
                .hasMessageContaining("store.minFreeDiskBytes must be 0 (never refuse writes) or more, got -1");
    }

    @Test
    void when_optionalKeysAreAbsent_then_defaultsApply() throws IOException {
        ServerConfig c = ServerConfig.load(write(BASE));

        assertThat(c.cluster().regionCount()).isEqualTo(24);
        assertThat(c.cluster().splitKeys()).isEmpty();
        assertThat(c.store().engine()).isEqualTo("memory");
        assertThat(c.store().compression()).isEqualTo("lz4");
        assertThat(c.store().hashIndex()).isTrue();
        assertThat(c.raft().electionTimeoutMs()).isEqualTo(5000);
        assertThat(c.raft().startupElectionTimeoutMs()).isEqualTo(2000);
        assertThat(c.raft().electionHeartbeatFactor()).isEqualTo(5);
        assertThat(c.raft().nodeHeartbeats()).isTrue();
        assertThat(c.raft().readsRideWrites()).isTrue();
        assertThat(c.raft().sync()).isTrue();
        assertThat(c.raft().snapshotIntervalSecs()).isEqualTo(600);
        assertThat(c.raft().disruptorBufferSize()).isEqualTo(1024);
        assertThat(c.limits()).isEqualTo(ServerConfig.LimitsConfig.DEFAULT);
        assertThat(c.limits().maxKeyBytes()).isEqualTo(4096);
        assertThat(c.balance().enabled()).isTrue();
        assertThat(c.merge()).isEqualTo(new ServerConfig.MergeConfig(false, 200_000L, 20L << 20, 10_000, 30_000));
        assertThat(c.replicationFactor()).as("3 nodes: every one holds every region").isEqualTo(3);
        assertThat(c.moves()).isEqualTo(new ServerConfig.MovesConfig(300_000L, 60_000L, 30_000L));
        assertThat(c.backup()).isEqualTo(new ServerConfig.BackupConfig(60_000L));
    }

    @Test
    void when_moveAndBackupTimesAreSet_then_theyAreBound() throws IOException {
        ServerConfig c = ServerConfig.load(write(BASE + """
                moves:
                  catchUpMs: 120000
                  strayLearnerMs: 2000
                  silentTargetMs: 4000
                backup:
                  sessionIdleMs: 5000
                """));

        assertThat(c.moves()).isEqualTo(new ServerConfig.MovesConfig(120_000L, 2_000L, 4_000L));
        assertThat(c.backup()).isEqualTo(new ServerConfig.BackupConfig(5_000L));
    }

    @ParameterizedTest(name = "{0} nodes, factor {1} -> {2}")
    @CsvSource(delimiter = '|', textBlock = """
            1 |   | 1
            2 |   | 2
            5 |   | 3
            5 | 5 | 5
            5 | 1 | 1
            """)
    void when_theFactorIsLeftOut_then_itIsThreeOrEveryNodeWhenThereAreFewer(int nodes, Integer factor, int expected) {
        List<String> peers = java.util.stream.IntStream.rangeClosed(1, nodes).mapToObj(i -> "127.0.0.1:" + (8180 + i)).toList();
        ServerConfig c = new ServerConfig(peers.get(0), "d", new ClusterConfig(peers, null, null), null, null,
                null, null).withReplication(new ServerConfig.ReplicationConfig(factor));

        assertThat(c.replicationFactor()).isEqualTo(expected);
    }

    @Test
    void when_splitKeysAreGivenWithoutRegionCount_then_regionCountFollowsThem() throws IOException {
        ServerConfig c = ServerConfig.load(write(BASE + "  splitKeys: [\"40\", \"80\", \"c0\"]\n"));

        assertThat(c.cluster().regionCount()).isEqualTo(4);
    }

    @ParameterizedTest(name = "{1}")
    @CsvSource(delimiter = '|', quoteCharacter = '~', textBlock = """
            # yaml appended to a valid file                        | key path named in the message
            raft: {electionTimeoutMS: 1000}                        | raft.electionTimeoutMS
            raft: {sync: true, snapshotIntervalSec: 60}            | raft.snapshotIntervalSec
            store: {engin: rocksdb}                                | store.engin
            limits: {maxKeyByte: 10}                               | limits.maxKeyByte
            balance: {enable: false}                               | balance.enable
            dataDirectory: /tmp/x                                  | dataDirectory
            Raft: {sync: true}                                     | Raft
            """)
    void when_aKeyIsUnknown_then_theErrorNamesTheFileAndTheKeyPath(String extra, String keyPath) throws IOException {
        ConfigException e = loadFails(BASE + extra + "\n");

        assertThat(e).hasMessageContaining("unknown key '" + keyPath + "'");
    }

    @Test
    void when_aNestedKeyIsMisspeltInBlockStyle_then_theErrorNamesItsFullPath() throws IOException {
        ConfigException e = loadFails(BASE + """
                raft:
                  sync: true
                  electionTimeoutMS: 1000
                store:
                  engine: memory
                """);

        assertThat(e).hasMessageContaining("'raft.electionTimeoutMS'").hasMessageContaining("electionTimeoutMs");
    }

    @Test
    void when_aClusterKeyIsMisspelt_then_theErrorNamesItsFullPath() throws IOException {
        ConfigException e = loadFails("""
                endpoint: 127.0.0.1:8181
                dataDir: d
                cluster:
                  peers: [127.0.0.1:8181]
                  regionCont: 4
                """);

        assertThat(e).hasMessageContaining("unknown key 'cluster.regionCont'");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '~', textBlock = """
            # yaml appended to a valid file               | words of the message
            store: {engine: leveldb}                      | store.engine must be memory or rocksdb, got 'leveldb'
            store: {engine: rocksdb, compression: gzip}   | store.compression
            raft: {electionTimeoutMs: fast}               | key 'raft.electionTimeoutMs'
            raft: {electionTimeoutMs: 50}                 | raft.electionTimeoutMs
            raft: {electionTimeoutMs: 1000, electionHeartbeatFactor: 1} | raft.electionHeartbeatFactor
            raft: {maxRequestsPerEntry: 0}                | raft: counts and intervals must be positive
            limits: {maxBatchOps: 0}                      | limits must be positive
            balance: {intervalMs: 1}                      | balance.intervalMs
            split: {maxKeys: 1}                           | split.maxKeys must be at least 2, got 1
            split: {maxOpsPerSecond: -5}                  | split.maxOpsPerSecond
            split: {checkIntervalMs: 10}                  | split.checkIntervalMs must be at least 100
            split: {maxBites: 5}                          | unknown key 'split.maxBites'
            merge: {maxKeys: -1}                          | merge.maxKeys must be 0 or more, got -1
            merge: {checkIntervalMs: 10}                  | merge.checkIntervalMs must be at least 100
            merge: {timeoutMs: 50}                        | merge.timeoutMs must be at least 1000, got 50
            merge: {enabled: maybe}                       | key 'merge.enabled'
            store: {blockCacheBytes: lots}                | key 'store.blockCacheBytes'
            replication: {factor: 0}                      | replication.factor must be at least 1, got 0
            replication: {factor: 4}                      | replication.factor 4 is above the 3 nodes in cluster.peers
            replication: {copies: 2}                      | unknown key 'replication.copies'
            moves: {catchUpMs: 10}                        | moves.catchUpMs must be at least 1000, got 10
            moves: {strayLearnerMs: 0}                    | moves.strayLearnerMs must be at least 1000
            moves: {silentTargetMs: 999}                  | moves.silentTargetMs must be at least 1000, got 999
            moves: {catchUpMS: 1000}                      | unknown key 'moves.catchUpMS'
            backup: {sessionIdleMs: 5}                    | backup.sessionIdleMs must be at least 1000
            backup: {idleMs: 5000}                        | unknown key 'backup.idleMs'
            """)
    void when_aValueIsInvalid_then_theErrorNamesTheFileAndTheKey(String extra, String words) throws IOException {
        ConfigException e = loadFails(BASE + extra + "\n");

        assertThat(e).hasMessageContaining(words);
    }

    @ParameterizedTest(name = "disruptorBufferSize {0}")
    @ValueSource(ints = {0, 3, 1000, 1023, -1024, Integer.MIN_VALUE})
    void when_disruptorBufferSizeIsNotAPositivePowerOfTwo_then_itIsRejected(int size) throws IOException {
        ConfigException e = loadFails(BASE + "raft: {disruptorBufferSize: " + size + "}\n");

        assertThat(e).hasMessageContaining("raft.disruptorBufferSize must be a power of two");
    }

    @ParameterizedTest(name = "disruptorBufferSize {0}")
    @ValueSource(ints = {1, 2, 64, 1024, 1 << 20})
    void when_disruptorBufferSizeIsAPowerOfTwo_then_itIsAccepted(int size) throws IOException {
        assertThat(ServerConfig.load(write(BASE + "raft: {disruptorBufferSize: " + size + "}\n")).raft().disruptorBufferSize())
                .isEqualTo(size);
    }

    @ParameterizedTest(name = "appendEntriesThreads {0}")
    @ValueSource(ints = {-1, 65, Integer.MIN_VALUE})
    void when_appendEntriesThreadsIsOutOfRange_then_itIsRejected(int threads) throws IOException {
        ConfigException e = loadFails(BASE + "raft: {appendEntriesThreads: " + threads + "}\n");

        assertThat(e).hasMessageContaining("raft.appendEntriesThreads must be 0 (jraft's own threads) to 64");
    }

    @ParameterizedTest(name = "appendEntriesThreads {0}")
    @ValueSource(ints = {0, 1, 4, 64})
    void when_appendEntriesThreadsIsInRange_then_itIsAccepted(int threads) throws IOException {
        assertThat(ServerConfig.load(write(BASE + "raft: {appendEntriesThreads: " + threads + "}\n")).raft().appendEntriesThreads())
                .isEqualTo(threads);
    }

    @Test
    void when_endpointIsNotAPeer_then_theErrorSaysSo() throws IOException {
        ConfigException e = loadFails(BASE.replace("endpoint: 127.0.0.1:8182", "endpoint: 127.0.0.1:9999"));

        assertThat(e).hasMessageContaining("endpoint 127.0.0.1:9999 is not one of cluster.peers");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '~', textBlock = """
            # yaml                                                                 | words of the message
            dataDir: d\\ncluster: {peers: [a:1]}                                   | endpoint is required
            endpoint: a:1\\ncluster: {peers: [a:1]}                                | dataDir is required
            endpoint: a:1\\ndataDir: d                                             | cluster is required
            endpoint: a:1\\ndataDir: d\\ncluster: {regionCount: 3}                 | cluster.peers is required
            endpoint: a:1\\ndataDir: d\\ncluster: {peers: []}                      | cluster.peers must not be empty
            endpoint: a:1\\ndataDir: d\\ncluster: {peers: [a:1, b:2, a:1]}         | cluster.peers has duplicates
            endpoint: a:1\\ndataDir: d\\ncluster: {peers: [a:1, b]}                | expected host:port, got 'b'
            endpoint: a\\ndataDir: d\\ncluster: {peers: [a:1]}                     | expected host:port, got 'a'
            endpoint: a:1\\ndataDir: d\\ncluster: {peers: [a:1], regionCount: 0}   | cluster.regionCount must be in 1..65536
            """)
    void when_aRequiredValueIsMissingOrWrong_then_theErrorSaysWhich(String yaml, String words) throws IOException {
        ConfigException e = loadFails(yaml.replace("\\n", "\n") + "\n");

        assertThat(e).hasMessageContaining(words);
    }

    @ParameterizedTest(name = "splitKeys {0}")
    @CsvSource(delimiter = '|', quoteCharacter = '~', textBlock = """
            # splitKeys                   | words of the message
            ["80", "40"]                  | cluster.splitKeys must be strictly ascending at '40'
            ["40", "40"]                  | cluster.splitKeys must be strictly ascending at '40'
            ["40", "80", "7fff"]          | cluster.splitKeys must be strictly ascending at '7fff'
            ["zz"]                        | cluster.splitKeys: 'zz' is not hex
            ["40", "abc"]                 | cluster.splitKeys: 'abc' is not hex
            ["0x40"]                      | cluster.splitKeys: '0x40' is not hex
            ["40", ""]                    | cluster.splitKeys: empty split key
            """)
    void when_splitKeysAreNotAscendingHex_then_theFileIsRejected(String splitKeys, String words) throws IOException {
        ConfigException e = loadFails(BASE + "  splitKeys: " + splitKeys + "\n");

        assertThat(e).hasMessageContaining(words);
    }

    @Test
    void when_splitKeysAreAscendingUnderUnsignedOrder_then_theyAreAccepted() throws IOException {
        ServerConfig c = ServerConfig.load(write(BASE + "  splitKeys: [\"0aaa\", \"7f\", \"80\", \"ff\", \"ff00\"]\n"));

        assertThat(c.cluster().regionCount()).isEqualTo(6);
    }

    @ParameterizedTest(name = "regionCount {0} with 2 split keys")
    @ValueSource(ints = {2, 4, 24})
    void when_regionCountDoesNotMatchTheSplitKeys_then_theErrorGivesBoth(int regionCount) throws IOException {
        ConfigException e = loadFails(BASE + "  regionCount: " + regionCount + "\n  splitKeys: [\"40\", \"80\"]\n");

        assertThat(e).hasMessageContaining("cluster.regionCount (" + regionCount + ") must be splitKeys.size() + 1 (3)");
    }

    @Test
    void when_theFileIsMissing_then_theErrorNamesIt() {
        Path f = dir.resolve("server-9.yaml");

        assertThatThrownBy(() -> ServerConfig.load(f)).isInstanceOf(ConfigException.class).hasMessage(f + ": no such file");
    }

    @Test
    void when_theYamlIsMalformed_then_theErrorNamesTheFile() throws IOException {
        ConfigException e = loadFails(BASE + "raft: [electionTimeoutMs: 1000\n");

        assertThat(e.getMessage()).isNotBlank();
    }

    @Test
    void when_dataDirIsOverridden_then_theRestIsKept() throws IOException {
        ServerConfig c = ServerConfig.load(write(BASE));

        ServerConfig moved = c.withDataDir("/elsewhere");

        assertThat(moved.dataDir()).isEqualTo("/elsewhere");
        assertThat(moved.withDataDir(c.dataDir())).isEqualTo(c);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"server-1.yaml", "server-2.yaml", "server-3.yaml"})
    void when_aShippedServerFileIsRead_then_itLoads(String name) {
        Path f = SHIPPED.resolve(name);
        assertThat(f).as("the shipped conf/%s (moved?)", name).isRegularFile();

        ServerConfig c = ServerConfig.load(f);

        assertThat(c.cluster().peers()).contains(c.endpoint());
        assertThat(c.cluster().regionCount()).isPositive();
    }

    @Test
    void when_theShippedServerFilesAreRead_then_theyDescribeTheSameClusterOnDistinctEndpointsAndDirs() {
        Path[] files = {SHIPPED.resolve("server-1.yaml"), SHIPPED.resolve("server-2.yaml"), SHIPPED.resolve("server-3.yaml")};
        for (Path f : files) {
            assertThat(f).as("a shipped server file (moved?)").isRegularFile();
        }

        ServerConfig[] c = {ServerConfig.load(files[0]), ServerConfig.load(files[1]), ServerConfig.load(files[2])};

        assertThat(c[1].cluster()).isEqualTo(c[0].cluster());
        assertThat(c[2].cluster()).isEqualTo(c[0].cluster());
        assertThat(new String[]{c[0].endpoint(), c[1].endpoint(), c[2].endpoint()}).doesNotHaveDuplicates();
        assertThat(new String[]{c[0].dataDir(), c[1].dataDir(), c[2].dataDir()}).doesNotHaveDuplicates();
    }

    @Test
    void when_theShippedFiveNodeFilesAreRead_then_theyDescribeOneClusterWithThreeReplicasPerRegion() {
        Path dir = SHIPPED.resolve("five-nodes");
        List<ServerConfig> c = java.util.stream.IntStream.rangeClosed(1, 5)
                .mapToObj(i -> ServerConfig.load(dir.resolve("server-" + i + ".yaml"))).toList();

        assertThat(c).extracting(ServerConfig::cluster).containsOnly(c.get(0).cluster());
        assertThat(c).extracting(ServerConfig::replicationFactor).containsOnly(3);
        assertThat(c.get(0).cluster().peers()).hasSize(5);
        assertThat(c).extracting(ServerConfig::endpoint).doesNotHaveDuplicates()
                .containsExactlyElementsOf(c.get(0).cluster().peers());
        assertThat(c).extracting(ServerConfig::dataDir).doesNotHaveDuplicates();
        assertThat(c).extracting(x -> x.metrics().port()).doesNotHaveDuplicates();
        assertThat(ClientConfig.load(dir.resolve("client.yaml")).servers()).isEqualTo(c.get(0).cluster().peers());
    }

    @Test
    void when_theShippedJoinFilesAreRead_then_theyJoinTheThreeNodeClusterOnNewEndpointsDirsAndPorts() {
        ServerConfig first = ServerConfig.load(SHIPPED.resolve("server-1.yaml"));
        List<ServerConfig> c = java.util.stream.IntStream.rangeClosed(4, 5)
                .mapToObj(i -> ServerConfig.load(SHIPPED.resolve("join/server-" + i + ".yaml"))).toList();

        for (ServerConfig j : c) {
            assertThat(j.cluster().joining()).isTrue();
            assertThat(j.cluster().join()).containsExactlyElementsOf(first.cluster().peers());
            assertThat(j.cluster().peers()).contains(j.endpoint()); // the members it knows of and itself
            assertThat(j.cluster().metaVoters()).isEmpty();
            assertThat(first.cluster().peers()).doesNotContain(j.endpoint());
            assertThat(j.dataDir()).isNotEqualTo(first.dataDir());
            assertThat(j.metrics().port()).isNotEqualTo(first.metrics().port());
        }
        assertThat(c.get(0).endpoint()).isNotEqualTo(c.get(1).endpoint());
    }

    @Test
    void when_aNodeJoinsNamingItself_then_itIsRefused() {
        assertThatThrownBy(() -> new ServerConfig("127.0.0.1:9", "d", new ClusterConfig(null, null, null,
                List.of("127.0.0.1:9")), null, null, null, null))
                .hasMessageContaining("names this node's own endpoint");
    }

    @Test
    void when_placementIsSetTooTight_then_theConfigIsRefused() {
        assertThatThrownBy(() -> new ServerConfig.PlacementConfig(true, 1000, 2000L, null))
                .hasMessageContaining("placement.downAfterMs");
        assertThatThrownBy(() -> new ServerConfig.PlacementConfig(true, 10, null, null))
                .hasMessageContaining("placement.intervalMs");
        assertThat(ServerConfig.PlacementConfig.DEFAULT.downAfterMs()).isEqualTo(600_000L);
        assertThatThrownBy(() -> new ServerConfig.PlacementConfig(true, null, null, 0))
                .hasMessage("placement.movesAtOnce must be 1 to 64, got 0");
        assertThat(ServerConfig.PlacementConfig.DEFAULT.movesAtOnce()).isEqualTo(3);
    }

    @Test
    void when_theShippedClientFileIsRead_then_itLoadsAndNamesThePeers() {
        Path f = SHIPPED.resolve("client.yaml");
        assertThat(f).as("the shipped conf/client.yaml (moved?)").isRegularFile();

        ClientConfig c = ClientConfig.load(f);

        assertThat(c.servers()).isNotEmpty();
        assertThat(ServerConfig.load(SHIPPED.resolve("server-1.yaml")).cluster().peers()).containsAll(c.servers());
    }

    /** Each reference scenario's files load, describe one cluster, and set the switches its name promises. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            # directory                          | engine  | client batching | pipeline | requests per entry
            s1-memory-batching-pipeline          | memory  | true            | true     | 4096
            s2-rocksdb-batching-pipeline         | rocksdb | true            | true     | 4096
            s3-memory-nobatching-pipeline        | memory  | false           | true     | 1
            s3b-memory-clientnobatching-pipeline | memory  | false           | true     | 4096
            s4-memory-nobatching-nopipeline      | memory  | false           | false    | 1
            e-memory-scan                        | memory  | true            | true     | 4096
            """)
    void when_aScenarioIsShipped_then_itsFilesSetTheSwitchesItsNameSays(String dir, String engine, boolean batching,
                                                                         boolean pipeline, int requestsPerEntry) {
        Path scenario = SHIPPED.resolve("scenarios").resolve(dir);
        assertThat(scenario).as("a shipped scenario (moved?)").isDirectory();

        ClientConfig client = ClientConfig.load(scenario.resolve("client.yaml"));
        assertThat(client.batching().enabled()).as("batching.enabled").isEqualTo(batching);
        for (int n = 1; n <= 3; n++) {
            ServerConfig c = ServerConfig.load(scenario.resolve("server-" + n + ".yaml"));
            assertThat(c.store().engine()).as("server-%d store.engine", n).isEqualTo(engine);
            assertThat(c.raft().replicatorPipeline()).as("server-%d raft.replicatorPipeline", n).isEqualTo(pipeline);
            assertThat(c.raft().maxRequestsPerEntry()).as("server-%d raft.maxRequestsPerEntry", n)
                    .isEqualTo(requestsPerEntry);
            assertThat(c.cluster().peers()).containsAll(client.servers());
            assertThat(c.summary()).as("server-%d summary, for reports", n)
                    .contains("store.engine=" + engine, "raft.maxRequestsPerEntry=" + requestsPerEntry)
                    .contains(pipeline ? "raft.replicatorPipeline=true raft.maxReplicatorInflightMsgs=256"
                            : "raft.replicatorPipeline=false (at most 2 AppendEntries outstanding per follower)");
        }
    }
}
