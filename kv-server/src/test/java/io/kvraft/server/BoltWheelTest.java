package io.kvraft.server;

import io.kvraft.server.launch.ServerMain;

import com.alipay.remoting.TimerHolder;
import com.alipay.sofa.jraft.option.RpcOptions;
import com.alipay.sofa.jraft.rpc.InvokeCallback;
import com.alipay.sofa.jraft.rpc.RpcClient;
import com.alipay.sofa.jraft.util.Endpoint;
import com.alipay.sofa.jraft.util.RpcFactoryHelper;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.rpc.WireProtocol;
import io.kvraft.server.launch.ProcessCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Each case runs in a JVM of its own: bolt's wheel is one per JVM, and the test JVM's in-process clusters have
 * started it long before. The calls go to a socket that accepts and never answers, so only the wheel ends them.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class BoltWheelTest {

    @Test
    void when_givenBeforeTheFirstCall_then_boltsTimeoutsRunOnTheSlowerWheel_andStillFire() throws Exception {
        Map<String, String> out = probe("first");
        assertThat(out.get("kept")).isEqualTo("null");
        assertThat(out.get("ours")).isEqualTo("true");
        assertThat(out.get("first call")).isEqualTo("InvokeTimeoutException");
        assertThat(out.get("second call")).isEqualTo("InvokeTimeoutException");
        assertThat(out.get("threads")).contains(BoltWheel.THREAD_NAME).doesNotContain("DefaultTimer10");
    }

    @Test
    void when_boltsWheelAlreadyRuns_then_itIsKept_andSaysWhy() throws Exception {
        Map<String, String> out = probe("late");
        assertThat(out.get("kept")).isEqualTo("bolt's wheel is already running");
        assertThat(out.get("ours")).isEqualTo("false");
        assertThat(out.get("second call")).isEqualTo("InvokeTimeoutException");
        assertThat(out.get("threads")).contains("DefaultTimer10").doesNotContain(BoltWheel.THREAD_NAME);
    }

    @Test
    void when_theServerStarts_then_itGivesBoltTheSlowerWheel() throws Exception {
        Map<String, String> out = probe("server");
        assertThat(out.get("ours")).isEqualTo("true");
    }

    private static Map<String, String> probe(String mode) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m"));
        cmd.addAll(ProcessCluster.OPENS);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), ProbeMain.class.getName(), mode));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).as(out).isTrue();
            Map<String, String> lines = out.lines().filter(l -> l.startsWith("probe "))
                    .map(l -> l.substring("probe ".length()).split(": ", 2))
                    .collect(Collectors.toMap(kv -> kv[0], kv -> kv.length > 1 ? kv[1] : ""));
            assertThat(lines).as(out).containsKey("ours");
            return lines;
        } finally {
            p.destroyForcibly();
        }
    }

    /** Runs in the child JVM; prints "probe NAME: VALUE" lines. */
    public static final class ProbeMain {
        public static void main(String[] args) throws Exception {
            String mode = args[0];
            if (mode.equals("server")) {
                // ServerMain exits 2 on the missing config; the hook reports what it did to bolt first
                Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println("probe ours: "
                        + (BoltWheel.installed() != null && TimerHolder.getTimer() == BoltWheel.installed()))));
                ServerMain.main(new String[]{"--config", "no-such-config.yaml"});
                return;
            }
            try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
                Thread sink = new Thread(() -> swallow(silent), "silent-peer");
                sink.setDaemon(true);
                sink.start();
                String kept = mode.equals("first") ? BoltWheel.apply() : null;
                WireProtocol.register();
                RpcClient rpc = RpcFactoryHelper.rpcFactory().createRpcClient();
                rpc.init(new RpcOptions());
                Endpoint peer = new Endpoint("127.0.0.1", silent.getLocalPort());
                System.out.println("probe first call: " + failureOf(rpc, peer));
                if (mode.equals("late")) {
                    // the first call's timeout started bolt's wheel, unless the call failed sooner (a connect that
                    // timed out on a loaded machine): start it as that timeout would have
                    TimerHolder.getTimer().newTimeout(t -> { }, 1, TimeUnit.MILLISECONDS);
                    kept = BoltWheel.apply();
                }
                System.out.println("probe second call: " + failureOf(rpc, peer));
                System.out.println("probe kept: " + kept);
                System.out.println("probe ours: " + (TimerHolder.getTimer() == BoltWheel.installed()));
                System.out.println("probe threads: " + Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                        .filter(n -> n.startsWith("DefaultTimer") || n.startsWith("bolt-wheel")).sorted().toList());
                rpc.shutdown();
            }
            System.exit(0);
        }

        /** The simple name of the error a 300 ms call to a silent peer ends with. */
        private static String failureOf(RpcClient rpc, Endpoint peer) throws Exception {
            CompletableFuture<String> f = new CompletableFuture<>();
            rpc.invokeAsync(peer, RegionsRequest.getDefaultInstance(), new InvokeCallback() {
                @Override
                public void complete(Object result, Throwable err) {
                    f.complete(err == null ? "answered" : err.getClass().getSimpleName());
                }

                @Override
                public Executor executor() {
                    return Runnable::run;
                }
            }, 300);
            return f.get(60, TimeUnit.SECONDS);
        }

        /** Accepts connections and reads what comes, never answering. */
        private static void swallow(ServerSocket server) {
            List<Socket> held = new ArrayList<>();
            try {
                while (true) {
                    Socket s = server.accept();
                    held.add(s);
                    Thread reader = new Thread(() -> {
                        try (InputStream in = s.getInputStream()) {
                            in.transferTo(java.io.OutputStream.nullOutputStream());
                        } catch (java.io.IOException closed) {
                            // the probe is ending
                        }
                    }, "silent-reader");
                    reader.setDaemon(true);
                    reader.start();
                }
            } catch (java.io.IOException closed) {
                // the probe is ending
            }
        }
    }
}
