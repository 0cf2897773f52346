package io.kvraft.client.admin;

/** A node's state in the cluster map (see {@link KvAdmin#nodeState}). */
public enum NodeState {
    /** Holds replicas; placement puts replicas on it. */
    UP,
    /** Placement moves its replicas and its map voter away; it takes no new ones. */
    DRAINING,
    /** Out for good: holds nothing, and a node with its data directory is refused. */
    REMOVED
}
