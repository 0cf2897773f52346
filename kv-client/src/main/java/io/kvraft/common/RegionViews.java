package io.kvraft.common;

import io.kvraft.common.proto.KvProto.RegionInfo;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Several nodes' answers to "which regions do you hold", merged into one map of the key space. A node lists only the
 * regions it holds a replica of, so with fewer replicas per region than nodes one answer can leave gaps; the client
 * asks node after node until the merged map {@link #covers} every key. Of two answers for one region the newer shape
 * wins (higher epoch, then higher conf version), then the fresher view of its leader (higher term, then the leader's
 * own answer, then one that knows a leader, then the cluster map's record over a replica that knows neither: a replica
 * that has heard from no leader yet, just made for a move, lists the voters it was made with, the record those a
 * leader reported). The result does not depend on the order answers are added in. A region whose range a newer region
 * (higher epoch) overlaps is left out: the answer came from a node that had not applied a split or merge yet.
 */
public final class RegionViews {

    private static final Comparator<byte[]> UNSIGNED = Arrays::compareUnsigned;

    private final Map<Integer, RegionInfo> byId = new HashMap<>();

    /** Adds one node's answer. */
    public void add(List<RegionInfo> regions) {
        for (RegionInfo r : regions) {
            byId.merge(r.getId(), r, (old, now) -> newer(now, old) ? now : old);
        }
    }

    /** Whether {@code a} is a newer view of one region than {@code b}. */
    static boolean newer(RegionInfo a, RegionInfo b) {
        if (a.getEpoch() != b.getEpoch()) {
            return a.getEpoch() > b.getEpoch();
        }
        if (a.getConfVer() != b.getConfVer()) {
            return a.getConfVer() > b.getConfVer(); // the newer voters: a node that lags lists the old ones
        }
        if (a.getTerm() != b.getTerm()) {
            return a.getTerm() > b.getTerm();
        }
        if (rank(a) != rank(b)) {
            return rank(a) > rank(b);
        }
        return a.getAppliedIndex() > b.getAppliedIndex();
    }

    private static int rank(RegionInfo r) {
        if (r.getRole().equals("LEADER")) {
            return 3;
        }
        if (!r.getLeader().isEmpty()) {
            return 2;
        }
        return r.getRole().isEmpty() ? 1 : 0; // only the map's record has no role
    }

    public boolean isEmpty() {
        return byId.isEmpty();
    }

    /** The merged regions in key order, less those a newer region overlaps. */
    public List<RegionInfo> regions() {
        List<RegionInfo> all = new ArrayList<>(byId.values());
        List<RegionInfo> kept = new ArrayList<>();
        for (RegionInfo r : all) {
            boolean overlapped = false;
            for (RegionInfo o : all) {
                overlapped |= o.getId() != r.getId() && o.getEpoch() > r.getEpoch() && overlap(o, r);
            }
            if (!overlapped) {
                kept.add(r);
            }
        }
        kept.sort(Comparator.comparing((RegionInfo r) -> r.getStartKey().toByteArray(), UNSIGNED)
                .thenComparing(RegionInfo::getId));
        return kept;
    }

    /** Whether the merged regions cover the whole key space, from -inf to +inf, without a gap or an overlap. */
    public boolean covers() {
        List<RegionInfo> sorted = regions();
        byte[] next = new byte[0]; // where the next region must start; empty = -inf for the first
        boolean first = true;
        for (RegionInfo r : sorted) {
            byte[] start = r.getStartKey().toByteArray();
            if (!first && next.length == 0 || !Arrays.equals(start, next)) {
                return false; // past +inf already, or a gap or an overlap before this region
            }
            next = r.getEndKey().toByteArray();
            first = false;
        }
        return !first && next.length == 0;
    }

    private static boolean overlap(RegionInfo a, RegionInfo b) {
        return below(a.getStartKey().toByteArray(), b.getEndKey().toByteArray())
                && below(b.getStartKey().toByteArray(), a.getEndKey().toByteArray());
    }

    /** start < end, with an empty end meaning +inf. */
    private static boolean below(byte[] start, byte[] end) {
        return end.length == 0 || Arrays.compareUnsigned(start, end) < 0;
    }
}
