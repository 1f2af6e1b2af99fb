/*
 * policy_pod: a Kubernetes manifest read for what a non-admin token may not ask of the cluster.
 * The whole object is walked, not the paths of one version's schema, so that every pod template
 * a PyTorchJob or TrainJob can carry (replica templates, runtimePatches, podTemplateOverrides,
 * podSpecOverrides, a later Trainer's) is held to the same rules wherever a field appears, its
 * name matched without regard to case:
 *
 *  - refused: privileged; hostNetwork, hostPID, hostIPC; hostPort; capabilities.add beyond
 *    IPC_LOCK; procMount other than Default; seccomp or AppArmor Unconfined (fields or
 *    annotations); SELinux user, role or a type outside container_*_t; Windows hostProcess;
 *    volumes other than configMap, secret, emptyDir, persistentVolumeClaim, projected,
 *    downwardAPI, ephemeral, csi and image (hostPath, nfs, awsElasticBlockStore, ... reach the
 *    node or storage outside the namespace); a claim bound to a chosen volume (volumeName);
 *  - held to the grants (policy_grants.h): serviceAccountName (and serviceAccount), every
 *    persistentVolumeClaim's claimName, every image, nodeName, nodeSelector and the node
 *    affinity's In/Exists terms.
 *
 * A field name that is not ASCII is refused (a decoder folding Unicode case could read it as
 * one of the above). Labels are not read (they are names, not settings). Pure; thread-safe.
 */
#ifndef TY_POLICY_POD_H
#define TY_POLICY_POD_H

#include <jansson.h>

#include "api/policy_grants.h"

/* Walks manifest; each refusal is a 403 field (policy_forbid) at `at` + its path. Returns the
 * number of refusals. */
int policy_pod_check(const struct policy_grants *g, const json_t *manifest, const char *at,
                     struct err *err);
/* Pod annotations that turn confinement off (AppArmor or seccomp "unconfined"), each refused at
 * `at`/<key>, `at` being the annotations object's pointer. Returns the number of refusals. */
int policy_pod_annotations(const json_t *annotations, const char *at, struct err *err);

#endif
