package io.kvraft.server.launch;

import io.kvraft.client.KvClient;
import io.kvraft.client.KvClients;
import io.kvraft.common.KvException;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.common.config.ConfigException;
import io.kvraft.common.config.TlsConfig;
import io.kvraft.common.ErrorCode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * Three server JVMs with mutual TLS on (Raft between them and clients on the same port), certificates
 * from conf/tls/make-certs.sh: a client with a certificate of the cluster's CA is served, its first
 * call (cold TLS handshakes included) within the default request timeout; a plaintext client and a
 * client whose certificate comes from another CA are refused.
 */
class TlsClusterTest {

    private static final String PASSWORD = "s3cret-pw";

    @TempDir
    Path dir;

    private static void makeCerts(Path out, String... names) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("bash", Path.of("..", "conf", "tls", "make-certs.sh").toString(),
                "-d", out.toString(), "-p", PASSWORD));
        cmd.addAll(List.of(names));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("KEYTOOL", Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        Process p = pb.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(output).isZero();
    }

    private static TlsConfig tls(Path keystore) {
        return new TlsConfig(true, keystore.toString(), PASSWORD, null);
    }

    @Test
    void when_clusterRunsMutualTls_then_itServesItsCaOnly() throws Exception {
        Path certs = dir.resolve("certs");
        Path foreign = dir.resolve("foreign");
        makeCerts(certs, "node1", "node2", "node3", "client");
        makeCerts(foreign, "client");

        List<Path> configs = LocalClusterConfigs.write(dir.resolve("conf"), 3, "memory", 1000, "");
        for (int i = 0; i < 3; i++) {
            Files.writeString(configs.get(i), """
                    tls:
                      enabled: true
                      keystore: %s
                      keystorePassword: %s
                    """.formatted(certs.resolve("node" + (i + 1) + ".p12"), PASSWORD),
                    java.nio.file.StandardOpenOption.APPEND);
        }
        List<String> jvm = List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");
        // ready = every region led and balanced, which needs the Raft traffic between the nodes over TLS
        try (ProcessCluster cluster = ProcessCluster.start(configs, dir.resolve("data"), jvm, Duration.ofSeconds(120))) {
            List<String> servers = cluster.servers();

            // our CA: served. Timeouts a loaded machine's first handshakes cannot run into: how fast TLS is,
            // is the benchmark's question (bench/tls-cost.sh)
            ClientConfig good = new ClientConfig(servers, 60_000L, 120_000L, null, null)
                    .withTls(tls(certs.resolve("client.p12")));
            try (KvClient client = KvClients.connect(good)) {
                client.put(bytes("first"), bytes("1")).join();
                List<CompletableFuture<Void>> puts = new ArrayList<>();
                for (int i = 0; i < 200; i++) {
                    puts.add(client.put(bytes("k" + i), bytes("v" + i)));
                }
                CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new)).join();
                assertThat(client.get(bytes("k199")).join()).isEqualTo(bytes("v199"));
            }

            // plaintext: refused
            ClientConfig plain = new ClientConfig(servers, 2000L, 4000L, null, null);
            Throwable e = catchThrowable(() -> {
                try (KvClient c = KvClients.connect(plain)) {
                    c.put(bytes("plain"), bytes("x")).join();
                }
            });
            // at once (a refused handshake is not retried until the deadline), naming the cause
            assertThat(KvException.unwrap(e).code()).as(String.valueOf(e)).isEqualTo(ErrorCode.UNAVAILABLE);
            assertThat(KvException.unwrap(e).permanent()).as(String.valueOf(e)).isTrue();
            assertThat(e).hasMessageContaining("TLS handshake failed: the server requires TLS");

            // a certificate of another CA: refused
            ClientConfig stranger = plain.withTls(tls(foreign.resolve("client.p12")));
            e = catchThrowable(() -> {
                try (KvClient c = KvClients.connect(stranger)) {
                    c.put(bytes("stranger"), bytes("x")).join();
                }
            });
            assertThat(KvException.unwrap(e).code()).as(String.valueOf(e)).isEqualTo(ErrorCode.UNAVAILABLE);
            assertThat(KvException.unwrap(e).permanent()).as(String.valueOf(e)).isTrue();
            assertThat(e).hasMessageContaining("TLS handshake failed: the server's certificate is not trusted");

            // neither reached the store
            try (KvClient client = KvClients.connect(good)) {
                assertThat(client.get(bytes("plain")).join()).isNull();
                assertThat(client.get(bytes("stranger")).join()).isNull();
            }
            String log = Files.readString(cluster.dataRoot().resolve("node1.log"));
            assertThat(log).contains("mutual TLS on");
        }
    }

    @Test
    void when_theKeystoreIsWrong_then_theConfigIsRefusedWithAClearError() throws Exception {
        Path certs = dir.resolve("certs");
        makeCerts(certs, "client");
        assertThatThrownBy(() -> new TlsConfig(true, certs.resolve("nope.p12").toString(), PASSWORD, null))
                .hasMessageContaining("no such file");
        assertThatThrownBy(() -> new TlsConfig(true, certs.resolve("client.p12").toString(), "wrong-pw", null))
                .hasMessageContaining("cannot open");
        assertThatThrownBy(() -> new TlsConfig(true, null, PASSWORD, null)).hasMessageContaining("tls.keystore is required");
        Path yaml = dir.resolve("client.yaml");
        Files.writeString(yaml, """
                servers: [127.0.0.1:1]
                tls:
                  enabled: true
                  keystore: %s
                  keystorePassword: wrong-pw
                """.formatted(certs.resolve("client.p12")));
        assertThatThrownBy(() -> ClientConfig.load(yaml)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("client.yaml").hasMessageContaining("tls");
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
