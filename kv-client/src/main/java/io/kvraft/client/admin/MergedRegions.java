package io.kvraft.client.admin;

import io.kvraft.common.RegionViews;

import java.util.List;

/**
 * Several answers about the regions ({@link KvAdmin#regions}, {@link ClusterInfo#regions}, ...) merged into one map of
 * the key space, as the client merges the nodes' answers: of two views of one region the newer shape wins (higher
 * epoch, then conf version), then the fresher view of its leader; a region a newer one overlaps is left out. Not
 * thread-safe.
 */
public final class MergedRegions {

    private final RegionViews views = new RegionViews();

    /** Adds one answer. */
    public MergedRegions add(List<RegionInfo> regions) {
        views.add(regions.stream().map(AdminWire::toWire).toList());
        return this;
    }

    public boolean isEmpty() {
        return views.isEmpty();
    }

    /** The merged regions in key order, less those a newer region overlaps. */
    public List<RegionInfo> regions() {
        return AdminWire.regions(views.regions());
    }

    /** Whether the merged regions cover the whole key space, from -inf to +inf, without a gap or an overlap. */
    public boolean covers() {
        return views.covers();
    }
}
