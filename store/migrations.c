/*
 * migrations: the whole schema and its history. Each entry runs once, in order, inside one
 * transaction, and PRAGMA user_version records how many have run. Append only: a released
 * migration is never edited; a change is a new entry.
 *
 * Times are int64 nanoseconds since the epoch (0 = not yet). Every table a job owns references
 * jobs(pk) ON DELETE CASCADE, so deleting a job removes all it owns.
 */
#include "store/internal.h"

static const char *const migrations[] = {
    /* 1: jobs, ranks, events, idempotency keys, tokens, audit, logs */
    "CREATE TABLE jobs ("
    "  pk INTEGER PRIMARY KEY,"
    "  id TEXT NOT NULL UNIQUE,"
    "  name TEXT NOT NULL,"
    "  executor TEXT NOT NULL,"
    "  state TEXT NOT NULL,"
    "  reason TEXT NOT NULL DEFAULT '',"
    "  message TEXT NOT NULL DEFAULT '',"
    "  priority INTEGER NOT NULL DEFAULT 0,"
    "  queue TEXT NOT NULL DEFAULT '',"
    "  nranks INTEGER NOT NULL,"
    "  spec TEXT NOT NULL,"                  /* canonical JSON, defaults filled in */
    "  owner TEXT NOT NULL DEFAULT '',"      /* name of the token that submitted it */
    "  attempt INTEGER NOT NULL DEFAULT 0,"  /* restarts of the whole job so far */
    "  desired TEXT NOT NULL DEFAULT 'run'," /* run | cancel | hold */
    "  created_at INTEGER NOT NULL,"
    "  started_at INTEGER NOT NULL DEFAULT 0,"
    "  finished_at INTEGER NOT NULL DEFAULT 0,"
    "  updated_at INTEGER NOT NULL,"
    "  first_failure TEXT,"                   /* JSON, set once */
    "  exec_state TEXT NOT NULL DEFAULT '{}'" /* executor-private JSON */
    ");"
    "CREATE INDEX jobs_by_state ON jobs(state, pk);"
    "CREATE INDEX jobs_by_name ON jobs(name, pk);"
    "CREATE INDEX jobs_runnable ON jobs(priority DESC, pk)"
    "  WHERE state = 'queued' AND desired = 'run';"
    "CREATE TABLE job_labels ("
    "  job_pk INTEGER NOT NULL REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  key TEXT NOT NULL, value TEXT NOT NULL,"
    "  PRIMARY KEY (key, value, job_pk)) WITHOUT ROWID;"
    "CREATE INDEX job_labels_by_job ON job_labels(job_pk, key, value);"
    "CREATE TABLE ranks ("
    "  job_pk INTEGER NOT NULL REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  rank INTEGER NOT NULL,"
    "  state TEXT NOT NULL,"
    "  pid INTEGER NOT NULL DEFAULT 0,"
    "  node TEXT NOT NULL DEFAULT '',"
    "  pod TEXT NOT NULL DEFAULT '',"
    "  exit_code INTEGER,"
    "  signal INTEGER,"
    "  restarts INTEGER NOT NULL DEFAULT 0,"
    "  reason TEXT NOT NULL DEFAULT '',"
    "  message TEXT NOT NULL DEFAULT '',"
    "  started_at INTEGER NOT NULL DEFAULT 0,"
    "  finished_at INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (job_pk, rank)) WITHOUT ROWID;"
    "CREATE TABLE events ("
    "  job_pk INTEGER NOT NULL REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL,"
    "  time INTEGER NOT NULL,"
    "  type TEXT NOT NULL,"
    "  reason TEXT NOT NULL DEFAULT '',"
    "  message TEXT NOT NULL DEFAULT '',"
    "  rank INTEGER,"
    "  source TEXT NOT NULL DEFAULT 'trainyard'," /* trainyard | kubernetes */
    "  PRIMARY KEY (job_pk, seq)) WITHOUT ROWID;"
    "CREATE TABLE idempotency ("
    "  owner TEXT NOT NULL, key TEXT NOT NULL,"
    "  body_hash TEXT NOT NULL,"
    "  job_pk INTEGER NOT NULL REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  created_at INTEGER NOT NULL,"
    "  PRIMARY KEY (owner, key)) WITHOUT ROWID;"
    "CREATE TABLE tokens ("
    "  pk INTEGER PRIMARY KEY,"
    "  id TEXT NOT NULL UNIQUE,"
    "  name TEXT NOT NULL,"
    "  hash TEXT NOT NULL UNIQUE," /* SHA-256 of the secret; the secret is never stored */
    "  scope TEXT NOT NULL,"       /* read | submit | admin | worker */
    "  job_pk INTEGER REFERENCES jobs(pk) ON DELETE CASCADE," /* worker tokens only */
    "  created_by TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL,"
    "  expires_at INTEGER NOT NULL DEFAULT 0,"
    "  revoked_at INTEGER NOT NULL DEFAULT 0,"
    "  last_used_at INTEGER NOT NULL DEFAULT 0);"
    "CREATE UNIQUE INDEX tokens_by_name ON tokens(name) WHERE revoked_at = 0 AND job_pk IS NULL;"
    "CREATE TABLE audit ("
    "  pk INTEGER PRIMARY KEY,"
    "  time INTEGER NOT NULL,"
    "  actor TEXT NOT NULL,"
    "  action TEXT NOT NULL,"
    "  target TEXT NOT NULL,"
    "  detail TEXT NOT NULL DEFAULT '{}',"
    "  request_id TEXT NOT NULL DEFAULT '');"
    "CREATE INDEX audit_by_target ON audit(target, pk);"
    /* Logs: lines live in compressed blocks; see store/logs.c for the block format. */
    "CREATE TABLE log_state ("
    "  job_pk INTEGER PRIMARY KEY REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  next_seq INTEGER NOT NULL DEFAULT 1,"
    "  first_seq INTEGER NOT NULL DEFAULT 1," /* oldest line still kept */
    "  lines INTEGER NOT NULL DEFAULT 0,"
    "  bytes INTEGER NOT NULL DEFAULT 0,"
    "  dropped_lines INTEGER NOT NULL DEFAULT 0,"
    "  dropped_bytes INTEGER NOT NULL DEFAULT 0,"
    "  unsealed_lines INTEGER NOT NULL DEFAULT 0," /* lines in blocks not yet sealed */
    "  complete INTEGER NOT NULL DEFAULT 0);" /* 1 once the job ended and every source drained */
    "CREATE TABLE log_sources ("
    "  job_pk INTEGER NOT NULL REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  src INTEGER NOT NULL,"
    "  key TEXT NOT NULL," /* the collector's stable name, e.g. a0/r3 */
    "  rank INTEGER NOT NULL,"
    "  pod TEXT NOT NULL DEFAULT '',"
    "  pid INTEGER NOT NULL DEFAULT 0,"
    "  attempt INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (job_pk, src), UNIQUE (job_pk, key)) WITHOUT ROWID;"
    "CREATE TABLE log_positions ("
    "  job_pk INTEGER NOT NULL REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  source TEXT NOT NULL,"
    "  position TEXT NOT NULL,"
    "  PRIMARY KEY (job_pk, source)) WITHOUT ROWID;"
    "CREATE TABLE log_blocks ("
    "  id INTEGER PRIMARY KEY,"
    "  job_pk INTEGER NOT NULL REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  first_seq INTEGER NOT NULL,"
    "  last_seq INTEGER NOT NULL,"
    "  first_time INTEGER NOT NULL,"
    "  last_time INTEGER NOT NULL,"
    "  nlines INTEGER NOT NULL,"
    "  nbytes INTEGER NOT NULL,"
    "  rank_mask INTEGER NOT NULL,"
    "  sealed INTEGER NOT NULL,"
    "  bloom BLOB);"
    "CREATE UNIQUE INDEX log_blocks_by_seq ON log_blocks(job_pk, first_seq);"
    "CREATE TABLE log_data ("
    "  block_id INTEGER PRIMARY KEY REFERENCES log_blocks(id) ON DELETE CASCADE,"
    "  data BLOB NOT NULL);",
    /* 2: the rendezvous of a job's ranks (NCCL unique id, fabric addresses, barriers) */
    "CREATE TABLE rendezvous_keys ("
    "  job_pk INTEGER NOT NULL REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  attempt INTEGER NOT NULL,"
    "  key TEXT NOT NULL,"
    "  value TEXT NOT NULL,"
    "  set_at INTEGER NOT NULL,"
    "  PRIMARY KEY (job_pk, attempt, key)) WITHOUT ROWID;"
    "CREATE TABLE rendezvous_arrivals ("
    "  job_pk INTEGER NOT NULL REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  attempt INTEGER NOT NULL,"
    "  barrier TEXT NOT NULL,"
    "  rank INTEGER NOT NULL,"
    "  world_size INTEGER NOT NULL,"
    "  at INTEGER NOT NULL,"
    "  PRIMARY KEY (job_pk, attempt, barrier, rank)) WITHOUT ROWID;",
    /* 3: job templates, S3 triggers (deliveries, dedupe, SNS subscriptions), outbound webhooks
     * (outbox, attempts, per-job cursor) */
    "CREATE TABLE templates ("
    "  pk INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  description TEXT NOT NULL DEFAULT '',"
    "  spec TEXT NOT NULL," /* the job spec with ${VARIABLES}, JSON */
    "  created_by TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL);"
    "CREATE TABLE triggers ("
    "  pk INTEGER PRIMARY KEY,"
    "  id TEXT NOT NULL UNIQUE," /* trg_...: the hook URL's last segment */
    "  name TEXT NOT NULL UNIQUE,"
    "  template_pk INTEGER NOT NULL REFERENCES templates(pk)," /* a used template is not deleted */
    "  template_values TEXT NOT NULL DEFAULT '{}',"
    "  rule TEXT NOT NULL DEFAULT '{}'," /* JSON: bucket, prefix, suffix, events, min_size */
    "  sender TEXT NOT NULL DEFAULT 'auto',"
    "  auth TEXT NOT NULL DEFAULT '{}',"    /* JSON without secrets: mode, header, topic_arns */
    "  secrets TEXT NOT NULL DEFAULT '[]'," /* JSON: sha256 digests, or whsec_ for hmac */
    "  enabled INTEGER NOT NULL DEFAULT 1,"
    "  created_by TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL);"
    "CREATE TABLE trigger_deliveries ("
    "  pk INTEGER PRIMARY KEY,"
    "  trigger_pk INTEGER NOT NULL REFERENCES triggers(pk) ON DELETE CASCADE,"
    "  received_at INTEGER NOT NULL,"
    "  sender TEXT NOT NULL,"
    "  delivery_id TEXT NOT NULL DEFAULT ''," /* SNS MessageId, EventBridge id, webhook-id */
    "  outcome TEXT NOT NULL,"                /* accepted ignored duplicate subscribe unsubscribed
                                                 rejected retry */
    "  status INTEGER NOT NULL,"
    "  verified INTEGER NOT NULL,"
    "  summary TEXT NOT NULL DEFAULT '',"
    "  error TEXT NOT NULL DEFAULT '',"
    "  events TEXT NOT NULL DEFAULT '[]'," /* JSON: each event, matched or why not */
    "  request_id TEXT NOT NULL DEFAULT '');"
    "CREATE INDEX trigger_deliveries_by_trigger ON trigger_deliveries(trigger_pk, pk);"
    "CREATE INDEX trigger_deliveries_by_time ON trigger_deliveries(received_at);"
    /* One row per object version per trigger: the dedupe, and the durable pending submission. */
    "CREATE TABLE trigger_objects ("
    "  pk INTEGER PRIMARY KEY,"
    "  trigger_pk INTEGER NOT NULL REFERENCES triggers(pk) ON DELETE CASCADE,"
    "  dedupe_key TEXT NOT NULL,"
    "  delivery_pk INTEGER NOT NULL," /* the first delivery (kept when deliveries are pruned) */
    "  event TEXT NOT NULL,"          /* the normalised upload event, JSON */
    "  state TEXT NOT NULL DEFAULT 'pending'," /* pending | submitted | failed */
    "  job_id TEXT NOT NULL DEFAULT '',"
    "  error TEXT NOT NULL DEFAULT '',"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  next_at INTEGER NOT NULL DEFAULT 0,"
    "  created_at INTEGER NOT NULL,"
    "  submitted_at INTEGER NOT NULL DEFAULT 0,"
    "  UNIQUE (trigger_pk, dedupe_key));"
    "CREATE INDEX trigger_objects_pending ON trigger_objects(next_at, pk) WHERE state = 'pending';"
    "CREATE INDEX trigger_objects_by_delivery ON trigger_objects(delivery_pk);"
    "CREATE TABLE trigger_seen ("
    "  trigger_pk INTEGER NOT NULL REFERENCES triggers(pk) ON DELETE CASCADE,"
    "  delivery_id TEXT NOT NULL,"
    "  first_seen INTEGER NOT NULL,"
    "  PRIMARY KEY (trigger_pk, delivery_id)) WITHOUT ROWID;"
    "CREATE INDEX trigger_seen_by_time ON trigger_seen(first_seen);"
    "CREATE TABLE trigger_sns ("
    "  trigger_pk INTEGER NOT NULL REFERENCES triggers(pk) ON DELETE CASCADE,"
    "  topic_arn TEXT NOT NULL,"
    "  state TEXT NOT NULL," /* pending | confirmed | failed | unsubscribed */
    "  subscribe_url TEXT NOT NULL DEFAULT '',"
    "  subscription_arn TEXT NOT NULL DEFAULT '',"
    "  error TEXT NOT NULL DEFAULT '',"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  next_at INTEGER NOT NULL DEFAULT 0,"
    "  updated_at INTEGER NOT NULL,"
    "  confirmed_at INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (trigger_pk, topic_arn)) WITHOUT ROWID;"
    "CREATE TABLE webhooks ("
    "  pk INTEGER PRIMARY KEY,"
    "  id TEXT NOT NULL UNIQUE," /* whk_... */
    "  name TEXT NOT NULL DEFAULT '',"
    "  url TEXT NOT NULL,"
    "  events TEXT NOT NULL,"                    /* JSON array of event names */
    "  secret TEXT NOT NULL,"                    /* whsec_...: needed to sign, so kept as is */
    "  format TEXT NOT NULL DEFAULT 'standard'," /* standard | slack */
    "  enabled INTEGER NOT NULL DEFAULT 1,"
    "  disabled_reason TEXT NOT NULL DEFAULT '',"
    "  created_by TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL);"
    /* The outbox: every message to send, written before anything is sent. */
    "CREATE TABLE webhook_outbox ("
    "  pk INTEGER PRIMARY KEY,"
    "  webhook_pk INTEGER NOT NULL REFERENCES webhooks(pk) ON DELETE CASCADE,"
    "  msg_id TEXT NOT NULL UNIQUE," /* webhook-id, the same on every attempt */
    "  event TEXT NOT NULL,"
    "  job_id TEXT NOT NULL DEFAULT ''," /* messages of one job go out in pk order */
    "  body TEXT NOT NULL,"
    "  state TEXT NOT NULL DEFAULT 'pending'," /* pending | delivered | failed */
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  next_at INTEGER NOT NULL,"
    "  last_status INTEGER NOT NULL DEFAULT 0,"
    "  last_error TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL,"
    "  finished_at INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX webhook_outbox_pending ON webhook_outbox(webhook_pk, job_id, pk)"
    "  WHERE state = 'pending';"
    "CREATE INDEX webhook_outbox_due ON webhook_outbox(next_at) WHERE state = 'pending';"
    "CREATE INDEX webhook_outbox_by_webhook ON webhook_outbox(webhook_pk, pk);"
    "CREATE TABLE webhook_attempts ("
    "  outbox_pk INTEGER NOT NULL REFERENCES webhook_outbox(pk) ON DELETE CASCADE,"
    "  attempt INTEGER NOT NULL,"
    "  time INTEGER NOT NULL,"
    "  status INTEGER NOT NULL," /* 0: no response */
    "  error TEXT NOT NULL DEFAULT '',"
    "  duration_ms INTEGER NOT NULL,"
    "  PRIMARY KEY (outbox_pk, attempt)) WITHOUT ROWID;"
    /* The last job event turned into messages, per job: events after it are still to send. */
    "CREATE TABLE webhook_cursors ("
    "  job_pk INTEGER PRIMARY KEY REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL);",
    /* 4: diagnosis (per attempt: summary, progress, stall, health; findings), metric time
     * series, node marks. See store/findings.c, store/metrics.c, store/nodes.c. */
    "CREATE TABLE diagnoses ("
    "  job_pk INTEGER NOT NULL REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  attempt INTEGER NOT NULL,"
    "  summary TEXT," /* JSON; NULL: nothing failed (so far) */
    "  findings_dropped INTEGER NOT NULL DEFAULT 0,"
    "  progress TEXT," /* JSON: step, total, loss, throughput, ETA */
    "  stalled INTEGER NOT NULL DEFAULT 0,"
    "  stall TEXT,"    /* JSON: the stall verdict and each rank's last line */
    "  health TEXT,"   /* JSON: per rank and node (heartbeats, GPUs) */
    "  decision TEXT," /* JSON: the restart decision when the attempt failed */
    "  updated_at INTEGER NOT NULL,"
    "  PRIMARY KEY (job_pk, attempt)) WITHOUT ROWID;"
    "CREATE TABLE findings ("
    "  job_pk INTEGER NOT NULL REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  attempt INTEGER NOT NULL,"
    "  key TEXT NOT NULL," /* pattern|kind|log rank|first evidence or time */
    "  time INTEGER NOT NULL,"
    "  ord INTEGER NOT NULL," /* position in the diagnosis when last saved */
    "  kind TEXT NOT NULL,"
    "  role TEXT NOT NULL,"
    "  rank INTEGER,"
    "  node TEXT NOT NULL DEFAULT '',"
    "  body TEXT NOT NULL," /* the finding as GET /v1/jobs/{id}/diagnosis shows it */
    "  PRIMARY KEY (job_pk, attempt, key)) WITHOUT ROWID;"
    "CREATE INDEX findings_by_node ON findings(node, time) WHERE node <> '';"
    "CREATE TABLE metric_series ("
    "  pk INTEGER PRIMARY KEY,"
    "  job_pk INTEGER NOT NULL REFERENCES jobs(pk) ON DELETE CASCADE,"
    "  name TEXT NOT NULL,"
    "  rank INTEGER NOT NULL,"
    "  source TEXT NOT NULL," /* log | report: the one source whose points it keeps */
    "  UNIQUE (job_pk, name, rank));"
    /* Points of one series from one append, packed (see store/metrics.c for the format). */
    "CREATE TABLE metric_blocks ("
    "  id INTEGER PRIMARY KEY,"
    "  series INTEGER NOT NULL REFERENCES metric_series(pk) ON DELETE CASCADE,"
    "  first_time INTEGER NOT NULL,"
    "  last_time INTEGER NOT NULL,"
    "  npoints INTEGER NOT NULL,"
    "  data BLOB NOT NULL);"
    "CREATE INDEX metric_blocks_by_series ON metric_blocks(series, first_time);"
    "CREATE TABLE node_marks ("
    "  name TEXT PRIMARY KEY,"
    "  state TEXT NOT NULL," /* suspect | bad */
    "  reason TEXT NOT NULL,"
    "  message TEXT NOT NULL DEFAULT '',"
    "  source TEXT NOT NULL DEFAULT ''," /* admin | preflight | diagnosis | dcgm */
    "  job_id TEXT NOT NULL DEFAULT '',"
    "  created_by TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL) WITHOUT ROWID;",
    /* 5: events that come from outside (Kubernetes Events) carry their identity, so that
     * seeing one again after a re-list or a daemon restart does not add it twice */
    "ALTER TABLE events ADD COLUMN ext_id TEXT;"
    "CREATE UNIQUE INDEX events_by_ext_id ON events(job_pk, ext_id)"
    "  WHERE ext_id IS NOT NULL;",
    /* 6: cluster policies (api/policy.h): what the Kubernetes jobs of non-admin tokens may use.
     * A token is governed by the one policy that names it, else by the one named "default". */
    "CREATE TABLE cluster_policies ("
    "  name TEXT PRIMARY KEY,"
    "  grants TEXT NOT NULL," /* JSON: namespaces, service_accounts, ... (api/policy_grants.c) */
    "  created_by TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE cluster_policy_tokens ("
    "  token_id TEXT PRIMARY KEY REFERENCES tokens(id) ON DELETE CASCADE,"
    "  policy TEXT NOT NULL REFERENCES cluster_policies(name) ON DELETE CASCADE) WITHOUT ROWID;"
    "CREATE INDEX cluster_policy_tokens_by_policy ON cluster_policy_tokens(policy);",
    /* 7: a job is owned by the id of the token that submitted it, not its name: a new token
     * given a revoked token's name is not the old one. Jobs from before get the id of the
     * newest token of their owner's name created before them (the one that submitted them). */
    "ALTER TABLE jobs ADD COLUMN owner_id TEXT NOT NULL DEFAULT '';"
    "UPDATE jobs SET owner_id = coalesce((SELECT t.id FROM tokens t WHERE t.name = jobs.owner"
    "  AND t.job_pk IS NULL AND t.created_at <= jobs.created_at"
    "  ORDER BY t.created_at DESC, t.pk DESC LIMIT 1), '');"
    /* Idempotency keys follow (store/jobs.c keys them by token id), so a retry across the
     * upgrade still finds its job. */
    "UPDATE OR IGNORE idempotency SET owner = (SELECT j.owner_id FROM jobs j"
    "  WHERE j.pk = idempotency.job_pk) WHERE EXISTS (SELECT 1 FROM jobs j"
    "  WHERE j.pk = idempotency.job_pk AND j.owner_id <> '');",
    /* 8: what jobs' own findings say about nodes (an Xid in a log, a failed preflight): one
     * row per (node, job), so that a mark needs jobs of several owners (store/nodes.h) */
    "CREATE TABLE node_evidence ("
    "  node TEXT NOT NULL,"
    "  job_id TEXT NOT NULL,"
    "  owner_id TEXT NOT NULL,"
    "  reason TEXT NOT NULL,"
    "  message TEXT NOT NULL DEFAULT '',"
    "  source TEXT NOT NULL," /* diagnosis | preflight */
    "  at INTEGER NOT NULL,"
    "  PRIMARY KEY (node, job_id)) WITHOUT ROWID;",
    /* 9: named queues an admin configures (store/queues.c); what the scheduler needs of a job
     * beside its row (GPUs per rank, deadline), and an index holding all of it for the waiting
     * jobs, so that a pass over 10,000 of them reads no spec */
    "CREATE TABLE queues ("
    "  name TEXT PRIMARY KEY,"
    "  priority INTEGER NOT NULL DEFAULT 0,"
    "  gpu_quota INTEGER NOT NULL DEFAULT -1," /* -1: none */
    "  description TEXT NOT NULL DEFAULT '',"
    "  updated_by TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL) WITHOUT ROWID;"
    "ALTER TABLE jobs ADD COLUMN gpus INTEGER NOT NULL DEFAULT 0;" /* per rank */
    "ALTER TABLE jobs ADD COLUMN deadline_seconds INTEGER NOT NULL DEFAULT 0;"
    "UPDATE jobs SET gpus = coalesce(json_extract(spec, '$.resources.gpus'), 0),"
    "  deadline_seconds = coalesce(json_extract(spec, '$.deadline_seconds'), 0);"
    "DROP INDEX jobs_runnable;"
    "CREATE INDEX jobs_waiting ON jobs(priority DESC, pk, executor, queue, nranks, gpus,"
    "  deadline_seconds, created_at, id) WHERE state = 'queued' AND desired = 'run';",
    /* 10: usage (store/usage.c). Kept after a job is deleted, so no table here references
     * jobs; usage_runs holds each run of a rank split by UTC day (from_ns..to_ns), usage_days
     * and usage_label_days its daily sums, usage_totals the sums since the start. Seconds are
     * REAL: a year of rank-nanoseconds overflows an integer. */
    "CREATE TABLE usage_groups ("
    "  gk INTEGER PRIMARY KEY,"
    "  owner TEXT NOT NULL, queue TEXT NOT NULL, executor TEXT NOT NULL,"
    "  instance_type TEXT NOT NULL, capacity_type TEXT NOT NULL,"
    "  UNIQUE (owner, queue, executor, instance_type, capacity_type));"
    "CREATE TABLE usage_jobs ("
    "  uj INTEGER PRIMARY KEY,"
    "  job_id TEXT NOT NULL UNIQUE,"
    "  name TEXT NOT NULL,"
    "  owner TEXT NOT NULL, queue TEXT NOT NULL, executor TEXT NOT NULL,"
    "  first_at INTEGER NOT NULL," /* end of its first recorded run: where it counts as a job */
    "  first_gk INTEGER NOT NULL REFERENCES usage_groups(gk));"
    "CREATE INDEX usage_jobs_by_first ON usage_jobs(first_at);"
    "CREATE TABLE usage_job_labels ("
    "  uj INTEGER NOT NULL REFERENCES usage_jobs(uj) ON DELETE CASCADE,"
    "  key TEXT NOT NULL, value TEXT NOT NULL,"
    "  PRIMARY KEY (uj, key)) WITHOUT ROWID;"
    "CREATE TABLE usage_runs ("
    "  uj INTEGER NOT NULL REFERENCES usage_jobs(uj) ON DELETE CASCADE,"
    "  attempt INTEGER NOT NULL, rank INTEGER NOT NULL,"
    "  started_at INTEGER NOT NULL," /* as reported: the run's identity */
    "  day INTEGER NOT NULL,"        /* days since 1970-01-01 UTC */
    "  from_ns INTEGER NOT NULL, to_ns INTEGER NOT NULL,"
    "  finished_at INTEGER NOT NULL,"
    "  gpus REAL NOT NULL,"
    "  gk INTEGER NOT NULL REFERENCES usage_groups(gk),"
    "  ck INTEGER NOT NULL REFERENCES usage_groups(gk)," /* its class: owner '', queue '' */
    "  node TEXT NOT NULL DEFAULT '',"
    /* by day first: a query's edge days read a stretch of the table, not a row per run */
    "  PRIMARY KEY (day, uj, attempt, rank, started_at)) WITHOUT ROWID;"
    "CREATE INDEX usage_runs_by_job ON usage_runs(uj, attempt, rank, started_at);"
    "CREATE TABLE usage_days ("
    "  day INTEGER NOT NULL, gk INTEGER NOT NULL,"
    "  gpu_seconds REAL NOT NULL, rank_seconds REAL NOT NULL,"
    "  runs INTEGER NOT NULL, jobs INTEGER NOT NULL,"
    "  PRIMARY KEY (day, gk)) WITHOUT ROWID;"
    "CREATE TABLE usage_label_days ("
    "  key TEXT NOT NULL, day INTEGER NOT NULL, gk INTEGER NOT NULL, value TEXT NOT NULL,"
    "  gpu_seconds REAL NOT NULL, rank_seconds REAL NOT NULL,"
    "  runs INTEGER NOT NULL, jobs INTEGER NOT NULL,"
    "  PRIMARY KEY (key, day, gk, value)) WITHOUT ROWID;"
    /* one value of a label (label=team=nlp) without reading the others */
    "CREATE INDEX usage_label_days_by_value ON usage_label_days(key, value, day);"
    /* The same sums per class (executor, instance type, capacity type: a group with no owner
     * and no queue), for the queries that do not ask by owner or queue: a label spread over
     * every owner has a row per owner and value a day in the tables above, a few here. */
    "CREATE TABLE usage_class_days ("
    "  day INTEGER NOT NULL, ck INTEGER NOT NULL,"
    "  gpu_seconds REAL NOT NULL, rank_seconds REAL NOT NULL,"
    "  runs INTEGER NOT NULL, jobs INTEGER NOT NULL,"
    "  PRIMARY KEY (day, ck)) WITHOUT ROWID;"
    "CREATE TABLE usage_label_class_days ("
    "  key TEXT NOT NULL, day INTEGER NOT NULL, ck INTEGER NOT NULL, value TEXT NOT NULL,"
    "  gpu_seconds REAL NOT NULL, rank_seconds REAL NOT NULL,"
    "  runs INTEGER NOT NULL, jobs INTEGER NOT NULL,"
    "  PRIMARY KEY (key, day, ck, value)) WITHOUT ROWID;"
    "CREATE INDEX usage_label_class_days_by_value ON usage_label_class_days(key, value, day);"
    "CREATE TABLE usage_totals ("
    "  gk INTEGER PRIMARY KEY,"
    "  gpu_seconds REAL NOT NULL, rank_seconds REAL NOT NULL,"
    "  runs INTEGER NOT NULL, jobs INTEGER NOT NULL);"
    "CREATE TABLE usage_prices ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  doc TEXT NOT NULL," /* JSON, checked by api/usage_price.c */
    "  updated_by TEXT NOT NULL DEFAULT '',"
    "  updated_at INTEGER NOT NULL);",
};

static int user_version(struct conn *c, int *version, struct err *err)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
        return sql_fail(c, err, "reading the schema version");
    int rc = sqlite3_step(s);
    *version = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 0 : sql_fail(c, err, "reading the schema version");
}

int migrations_apply(struct conn *c, struct err *err)
{
    const int latest = (int)(sizeof(migrations) / sizeof(migrations[0]));
    if (sql_exec(c, "BEGIN IMMEDIATE", err) < 0)
        return err_wrap(err, "migrating the database");
    int version;
    if (user_version(c, &version, err) < 0)
        goto fail;
    if (version > latest) {
        err_set(err, ERR_UNAVAILABLE,
                "the database has schema version %d, newer than this trainyard (%d)", version,
                latest);
        goto fail;
    }
    for (int v = version; v < latest; v++) {
        char pragma[64];
        snprintf(pragma, sizeof(pragma), "PRAGMA user_version=%d", v + 1);
        if (sql_exec(c, migrations[v], err) < 0 || sql_exec(c, pragma, err) < 0) {
            err_wrap(err, "migration %d", v + 1);
            goto fail;
        }
    }
    return sql_exec(c, "COMMIT", err);
fail:;
    struct err ignore;
    err_init(&ignore);
    sql_exec(c, "ROLLBACK", &ignore);
    err_release(&ignore);
    return -1;
}
