package io.kvraft.benchmark.nemesis;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Network namespaces for the nodes of a nemesis run, so a node can be cut off or made lossy with
 * iptables inside its own namespace: one namespace per node on a bridge that lives in a namespace of
 * its own, and a veth into the root namespace for the client. Addresses are 10.77.S.0/24 with S
 * picked per run; a blackhole route keeps anything for 10.77/16 from leaving the machine. Needs root,
 * iproute2 and iptables. Everything made is removed by {@link #close()}.
 */
public final class NetLab implements AutoCloseable {

    private final String id;
    private final int subnet;
    private final int nodes;
    private final List<String> created = new ArrayList<>();
    private boolean addedBlackhole;
    private boolean hostLink;

    private NetLab(int nodes) {
        this.nodes = nodes;
        this.id = Integer.toHexString(0x1000 + ThreadLocalRandom.current().nextInt(0xefff));
        this.subnet = 1 + (int) (ProcessHandle.current().pid() % 250);
    }

    /** Why network faults cannot run here, or null when they can. */
    public static String unavailableReason() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "network faults (partition, loss) need root: they run the nodes in network namespaces";
        }
        for (List<String> probe : List.of(List.of("ip", "-V"), List.of("iptables", "--version"))) {
            try {
                Process p = new ProcessBuilder(probe).redirectErrorStream(true).start();
                p.getInputStream().readAllBytes();
                if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
                    return "'" + String.join(" ", probe) + "' failed";
                }
            } catch (IOException e) {
                return "network faults need '" + probe.get(0) + "' (Debian: apt-get install iproute2 iptables)";
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return "interrupted";
            }
        }
        return null;
    }

    /** Creates the namespaces, bridge and host link; on failure removes what it made and throws. */
    public static NetLab create(int nodes) {
        NetLab lab = new NetLab(nodes);
        try {
            lab.build();
            return lab;
        } catch (RuntimeException e) {
            lab.close();
            throw e;
        }
    }

    private void build() {
        addedBlackhole = runQuietly("ip", "route", "add", "blackhole", "10.77.0.0/16");
        String sw = switchNs();
        run("ip", "netns", "add", sw);
        created.add(sw);
        run("ip", "netns", "exec", sw, "ip", "link", "set", "lo", "up");
        run("ip", "netns", "exec", sw, "ip", "link", "add", "br0", "type", "bridge");
        run("ip", "netns", "exec", sw, "ip", "link", "set", "br0", "up");
        for (int i = 0; i < nodes; i++) {
            String ns = namespace(i);
            String veth = "v" + id + "-" + (i + 1);
            run("ip", "netns", "add", ns);
            created.add(ns);
            run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns);
            run("ip", "link", "set", veth, "netns", sw);
            run("ip", "netns", "exec", sw, "ip", "link", "set", veth, "master", "br0");
            run("ip", "netns", "exec", sw, "ip", "link", "set", veth, "up");
            run("ip", "netns", "exec", ns, "ip", "addr", "add", nodeIp(i) + "/24", "dev", "eth0");
            run("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up");
            run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up");
        }
        run("ip", "link", "add", hostIf(), "type", "veth", "peer", "name", "vhost", "netns", sw);
        hostLink = true;
        run("ip", "netns", "exec", sw, "ip", "link", "set", "vhost", "master", "br0");
        run("ip", "netns", "exec", sw, "ip", "link", "set", "vhost", "up");
        run("ip", "addr", "add", "10.77." + subnet + ".254/24", "dev", hostIf());
        run("ip", "link", "set", hostIf(), "up");
    }

    /** Node i's address (0-based). */
    public String nodeIp(int i) {
        return "10.77." + subnet + "." + (i + 1);
    }

    /** The command prefix that runs a process in node i's namespace. */
    public List<String> prefix(int i) {
        return List.of("ip", "netns", "exec", namespace(i));
    }

    /** Node i drops everything to and from the other nodes and the client, both ways. */
    public void isolate(int i) {
        String net = "10.77." + subnet + ".0/24";
        iptables(i, "-A", "INPUT", "-s", net, "-j", "DROP");
        iptables(i, "-A", "OUTPUT", "-d", net, "-j", "DROP");
    }

    /** Node i loses {@code fraction} of its packets, both ways. */
    public void lossy(int i, double fraction) {
        String p = String.format(java.util.Locale.ROOT, "%.2f", fraction);
        iptables(i, "-A", "INPUT", "-m", "statistic", "--mode", "random", "--probability", p, "-j", "DROP");
        iptables(i, "-A", "OUTPUT", "-m", "statistic", "--mode", "random", "--probability", p, "-j", "DROP");
    }

    /** Removes node i's rules. */
    public void heal(int i) {
        iptables(i, "-F");
    }

    private void iptables(int i, String... args) {
        List<String> cmd = new ArrayList<>(prefix(i));
        cmd.add("iptables");
        cmd.addAll(List.of(args));
        run(cmd.toArray(String[]::new));
    }

    private String namespace(int i) {
        return "kvn" + id + "-" + (i + 1);
    }

    private String switchNs() {
        return "kvsw" + id;
    }

    private String hostIf() {
        return "kvh" + id;
    }

    @Override
    public void close() {
        for (int i = created.size() - 1; i >= 0; i--) {
            runQuietly("ip", "netns", "del", created.get(i));
        }
        created.clear();
        if (hostLink) {
            runQuietly("ip", "link", "del", hostIf()); // usually gone with its peer's namespace already
            hostLink = false;
        }
        if (addedBlackhole) {
            runQuietly("ip", "route", "del", "blackhole", "10.77.0.0/16");
            addedBlackhole = false;
        }
    }

    private static void run(String... cmd) {
        String out = exec(cmd);
        if (out != null) {
            throw new IllegalStateException("'" + String.join(" ", cmd) + "' failed: " + out.strip());
        }
    }

    private static boolean runQuietly(String... cmd) {
        return exec(cmd) == null;
    }

    /** Runs a command; null on success, else its output (or why it could not run). */
    private static String exec(String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return "timed out";
            }
            return p.exitValue() == 0 ? null : out + " (exit " + p.exitValue() + ")";
        } catch (IOException e) {
            return e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }
}
