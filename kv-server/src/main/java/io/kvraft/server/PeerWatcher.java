package io.kvraft.server;

import com.alipay.sofa.jraft.Node;
import io.kvraft.server.region.Region;
import io.kvraft.server.host.RegionHost;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashSet;
import java.util.Set;

/**
 * Logs one line when a peer joins (is heard from) or leaves (is no longer heard from), as this node
 * sees it: a peer is up while some region this node leads gets its replies (jraft's or to node heartbeats), or while it leads a
 * region this node follows. Runs on the housekeeping thread every second.
 */
final class PeerWatcher implements Runnable {

    private static final Logger LOG = LoggerFactory.getLogger(PeerWatcher.class);

    private final RegionHost host;
    private final Set<String> up = new HashSet<>();

    PeerWatcher(RegionHost host) {
        this.host = host;
    }

    @Override
    public void run() {
        try {
            check();
        } catch (RuntimeException e) {
            LOG.warn("peer check failed: {}", e.toString());
        }
    }

    private void check() {
        Set<String> now = new HashSet<>();
        boolean leadsAny = false;
        for (Region r : host.regions()) {
            Node node = r.node();
            if (node == null) {
                continue;
            }
            if (r.isLeader()) {
                leadsAny = true;
                now.addAll(r.alivePeers());
            } else if (!r.leaderHint().isEmpty()) {
                now.add(r.leaderHint());
            }
        }
        now.remove(host.endpoint());
        if (!leadsAny && now.isEmpty()) {
            return; // nothing to judge by (start-up, or every region is electing)
        }
        for (String p : now) {
            if (up.add(p)) {
                LOG.info("peer {} joined (heard from)", p);
            }
        }
        for (var it = up.iterator(); it.hasNext(); ) {
            String p = it.next();
            if (!now.contains(p)) {
                it.remove();
                LOG.info("peer {} left (not heard from)", p);
            }
        }
    }
}
