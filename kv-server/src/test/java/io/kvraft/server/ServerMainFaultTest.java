package io.kvraft.server;

import io.kvraft.server.launch.ServerMain;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ServerMain refuses to start with one line on stderr and a distinct exit code: 2 for a bad config
 * file, 3 when the node cannot start (data directory, disk state, port).
 */
class ServerMainFaultTest {

    @TempDir
    Path dir;

    private PrintStream savedErr;
    private ByteArrayOutputStream err;

    @BeforeEach
    void captureStderr() {
        savedErr = System.err;
        err = new ByteArrayOutputStream();
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @AfterEach
    void restoreStderr() {
        System.setErr(savedErr);
        System.out.println("stderr was: " + stderr());
    }

    private int run(String... args) {
        CommandLine cmd = new CommandLine(new ServerMain());
        cmd.setErr(new PrintWriter(System.err, true));
        return cmd.execute(args);
    }

    private String stderr() {
        return err.toString(StandardCharsets.UTF_8);
    }

    private void assertOneLine(String... parts) {
        String out = stderr();
        assertThat(out.strip()).as("stderr").doesNotContain("\n").doesNotContain("\tat ").startsWith("kv-server: ");
        for (String p : parts) {
            assertThat(out).contains(p);
        }
    }

    private Path config(String dataDir, String engine, int port) throws Exception {
        Path f = dir.resolve("server.yaml");
        Files.writeString(f, """
                endpoint: 127.0.0.1:%d
                dataDir: %s
                cluster:
                  peers: [127.0.0.1:%d]
                  regionCount: 4
                store:
                  engine: %s
                  blockCacheBytes: 8388608
                  writeBufferBytes: 4194304
                """.formatted(port, dataDir, port, engine));
        return f;
    }

    private Path config(String dataDir, String engine) throws Exception {
        return config(dataDir, engine, InProcessCluster.freePort());
    }

    @Test
    void when_theDataDirIsUnderARegularFile_then_exitCode3AndOneLine() throws Exception {
        Path file = Files.writeString(dir.resolve("a-file"), "x");
        Path dataDir = file.resolve("sub");

        int code = run("--config", config(dataDir.toString(), "memory").toString());

        assertThat(code).isEqualTo(3);
        assertOneLine("cannot start node", dataDir.toString(), file + " is a file");
    }

    @Test
    void when_theDataDirIsAFile_then_exitCode3AndOneLine() throws Exception {
        Path file = Files.writeString(dir.resolve("data"), "x");

        int code = run("--config", config(file.toString(), "rocksdb").toString());

        assertThat(code).isEqualTo(3);
        assertOneLine(file + " is a file, not a directory");
        assertThat(Files.readString(file)).isEqualTo("x");
    }

    @Test
    void when_theDataDirWasMadeByTheOtherEngine_then_exitCode3AndNothingIsChanged() throws Exception {
        Path data = dir.resolve("data");
        Files.createDirectories(data.resolve("raft").resolve("region-1"));
        Files.writeString(data.resolve(DataDir.ENGINE_FILE), "memory\n");
        Files.writeString(data.resolve("raft").resolve("region-1").resolve("something"), "keep me");
        Map<String, String> before = contents(data);

        int code = run("--config", config(data.toString(), "rocksdb").toString());

        assertThat(code).isEqualTo(3);
        assertOneLine("holds a 'memory' store but store.engine is 'rocksdb'", "nothing was changed");
        assertThat(contents(data)).isEqualTo(before);
    }

    @Test
    void when_theDataDirHoldsSomethingElse_then_exitCode3AndNothingIsChanged() throws Exception {
        Path data = Files.createDirectories(dir.resolve("data"));
        Files.writeString(data.resolve("photos.tar"), "not ours");
        Map<String, String> before = contents(data);

        int code = run("--config", config(data.toString(), "memory").toString());

        assertThat(code).isEqualTo(3);
        assertOneLine("is not empty and has no ENGINE file");
        assertThat(contents(data)).isEqualTo(before);
    }

    @Test
    void when_theDataDirIsGivenOnTheCommandLine_then_itOverridesTheYamlAndIsChecked() throws Exception {
        Path file = Files.writeString(dir.resolve("a-file"), "x");

        int code = run("--config", config(dir.resolve("fine").toString(), "memory").toString(),
                "--data-dir", file.resolve("sub").toString());

        assertThat(code).isEqualTo(3);
        assertOneLine(file + " is a file");
        assertThat(dir.resolve("fine")).doesNotExist();
    }

    @Test
    void when_aRegionsRaftMetaIsUnreadable_then_exitCode3NamingTheFile() throws Exception {
        Path data = Files.createDirectories(dir.resolve("data"));
        Files.writeString(data.resolve(DataDir.ENGINE_FILE), "memory\n");
        Path meta = Files.createDirectories(data.resolve("raft").resolve("region-2").resolve("meta")).resolve("raft_meta");
        Files.write(meta, new byte[] {0x7f, 0x7f, 0x7f, 0x7f, 1, 2, 3});

        int code = run("--config", config(data.toString(), "memory").toString());

        assertThat(code).isEqualTo(3);
        assertOneLine("region 2: raft meta " + meta + " is unreadable", "refusing to start");
        assertThat(Files.readAllBytes(meta)).containsExactly(0x7f, 0x7f, 0x7f, 0x7f, 1, 2, 3);
    }

    @Test
    void when_thePortIsTaken_then_exitCode3() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            int code = run("--config", config(dir.resolve("data").toString(), "memory", taken.getLocalPort()).toString());

            assertThat(code).isEqualTo(3);
            assertOneLine("cannot start node 127.0.0.1:" + taken.getLocalPort(), "Address already in use");
        }
    }

    @Test
    void when_theConfigFileIsMissing_then_exitCode2NamingIt() {
        Path missing = dir.resolve("nope.yaml");

        int code = run("--config", missing.toString());

        assertThat(code).isEqualTo(2);
        assertOneLine(missing.toString(), "no such file");
    }

    @Test
    void when_theConfigFileIsMalformed_then_exitCode2NamingIt() throws Exception {
        Path f = Files.writeString(dir.resolve("bad.yaml"), "endpoint: [127.0.0.1:1\ndataDir: {\n");

        int code = run("--config", f.toString());

        assertThat(code).isEqualTo(2);
        assertOneLine(f.toString(), "malformed YAML");
    }

    @Test
    void when_theConfigHasABadValue_then_exitCode2NamingTheFileAndKey() throws Exception {
        Path f = config(dir.resolve("data").toString(), "leveldb");

        int code = run("--config", f.toString());

        assertThat(code).isEqualTo(2);
        assertOneLine(f.toString(), "store.engine must be memory or rocksdb");
        assertThat(dir.resolve("data")).doesNotExist();
    }

    @Test
    void when_helpIsAsked_then_theExitCodesAreListed() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        CommandLine cmd = new CommandLine(new ServerMain());
        cmd.setOut(new PrintWriter(out, true, StandardCharsets.UTF_8));

        int code = cmd.execute("--help");

        assertThat(code).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("Exit codes:").containsPattern("2\\s+bad command line or config")
                .containsPattern("3\\s+cannot start: data directory");
    }

    private static Map<String, String> contents(Path root) throws Exception {
        Map<String, String> m = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path p : (Iterable<Path>) walk::iterator) {
                m.put(root.relativize(p).toString(), Files.isRegularFile(p) ? Files.readString(p) : "<dir>");
            }
        }
        return m;
    }
}
