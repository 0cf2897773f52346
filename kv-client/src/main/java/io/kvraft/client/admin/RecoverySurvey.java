package io.kvraft.client.admin;

import io.kvraft.common.KvException;

import java.util.List;
import java.util.Map;

/**
 * What {@link KvAdmin#surveyRecovery} found over every region of the cluster map.
 *
 * @param plans    a plan for each region that lost a majority of its voters and can be recovered now
 * @param refused  each region that lost its majority but cannot be recovered now, by id, with why (as
 *                 {@link KvAdmin#planRecovery} would refuse it: a lost voter's node not removed yet, no live replica)
 * @param whole    how many regions need nothing: a replica knows a leader, or a majority of the voters is live
 */
public record RecoverySurvey(List<RecoveryPlan> plans, Map<Integer, KvException> refused, int whole) {
}
