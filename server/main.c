/* main.c - mcached: parse the settings, bring the modules up in order, serve
 * until SIGTERM or SIGINT, then stop accepting, commit what is pending and
 * exit 0 -- or, when the store keeps failing for --shutdown-timeout, log
 * what stayed uncommitted and exit 3.
 *
 * Shutdown is bounded: commit_shutdown starts the deadline before
 * rpc_stop, whose workers wait for the replies held for a commit; past the
 * deadline the committer answers those with EIO, so rpc_stop and
 * commit_stop both return. */
#include <errno.h>
#include <event2/thread.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "area.h"
#include "clients.h"
#include "clock.h"
#include "commit.h"
#include "config.h"
#include "log.h"
#include "mc_config.h"
#include "mcd.h"
#include "notify.h"
#include "restart.h"
#include "ns.h"
#include "rpc.h"
#include "shm.h"
#include "shrink.h"
#include "slowlog.h"
#include "store.h"
#include "warm.h"
#include "watch.h"

int main(int argc, char **argv)
{
	struct mcd_config cfg;
	struct mcd m = { .cfg = &cfg };
	int rc, status = 1;
	bool warmed = false;   /* the kept segment's (and then this run's) warm-up was over */

	config_defaults(&cfg);
	rc = config_parse(&cfg, argc, argv, stdout, stderr);
	if (rc != 0) {
		config_free(&cfg);
		return rc > 0 ? 0 : 2;
	}
	log_set_level((enum log_level)cfg.log_level);
	m.start_ns = mono_ns();
	m.start_time_s = (uint64_t)time(NULL);

	/* Signals: SIGPIPE ignored; SIGTERM/SIGINT/SIGHUP blocked in every
	 * thread and taken with sigwait below. */
	signal(SIGPIPE, SIG_IGN);
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	if (evthread_use_pthreads() < 0) {
		log_error("cannot enable libevent threading");
		goto out;
	}

	struct store_opts so = {
		.map_size = cfg.map_size,
		.log_retention = cfg.log_retention,
		.log_max_bytes = cfg.log_retention_bytes,
		.log_max_age_s = cfg.log_retention_age_s,
		.root_mode = cfg.root_mode,
		.root_uid = (uint32_t)geteuid(),
		.root_gid = (uint32_t)getegid(),
	};
	rc = store_open(cfg.data_dir, &so, &m.store);
	if (rc < 0) {
		if (rc == -EBUSY)
			log_error("data directory %s is in use by another mcached", cfg.data_dir);
		else
			log_error("cannot open data directory %s: %s", cfg.data_dir, strerror(-rc));
		goto out;
	}
	rc = -ENOENT;
	if (cfg.shm_path) {
		const char *why;
		rc = restart_attach(cfg.shm_path, cfg.cache_size, m.store, &m.shm, &warmed, &why);
		if (rc == 0)
			log_info("re-attached the segment %s: its cache is served at once", cfg.shm_path);
		else if (rc == -ENOENT)
			log_info("no state saved beside the segment %s (a first start, or the "
			         "last stop was not clean): a new one is warmed", cfg.shm_path);
		else
			log_info("not re-attaching the segment %s (%s): a new one is warmed",
			         cfg.shm_path, why ? why : strerror(-rc));
		m.reattached = rc == 0;
	}
	if (!m.reattached)
		rc = shm_create_at(cfg.shm_path, cfg.cache_size, &m.shm);
	if (rc < 0) {
		log_error("cannot create a %llu-byte shared-memory segment%s%s: %s",
		          (unsigned long long)cfg.cache_size, cfg.shm_path ? " at " : "",
		          cfg.shm_path ? cfg.shm_path : "", strerror(-rc));
		goto out;
	}
	rc = area_create(m.shm->size, cfg.max_conns < 4096 ? cfg.max_conns : 4096, &m.area);
	if (rc < 0) {
		log_error("cannot create the client area: %s", strerror(-rc));
		goto out;
	}
	area_publish(m.area, m.shm->hdr);
	shm_set_refbits(m.shm, m.area->refbits, m.area->nbits);
	rc = shm_beat_start(m.shm);
	if (rc < 0) {
		log_error("cannot start the heartbeat: %s", strerror(-rc));
		goto out;
	}
	struct ns_opts no = {
		.journal_max_records = cfg.journal_max_records,
		.journal_max_bytes = cfg.journal_max_bytes,
		.journal_wait_ms = cfg.journal_wait_ms,
		.neg_max = cfg.neg_max,
		.neg_dir_max = cfg.neg_dir_max,
		.cache_high_pct = cfg.cache_high_pct,
		.cache_low_pct = cfg.cache_low_pct,
	};
	rc = ns_new(m.shm, m.store, &no, &m.ns);
	if (rc < 0) {
		log_error("cannot load the namespace: %s", strerror(-rc));
		goto out;
	}
	rc = commit_start(m.ns, m.store, cfg.commit_interval_ms, &m.commit);
	if (rc < 0) {
		log_error("cannot start the committer: %s", strerror(-rc));
		goto out;
	}
	rc = shrink_start(m.ns);
	if (rc < 0) {
		log_error("cannot start the shrinker: %s", strerror(-rc));
		goto out;
	}
	if (clients_new(&m.clients) < 0 ||
	    slowlog_new(cfg.slowlog_ms * 1000ull, cfg.slowlog_len, &m.slowlog) < 0 ||
	    watch_hub_new(&m.watch) < 0) {
		rc = -ENOMEM;
		log_error("cannot start: out of memory");
		goto out;
	}
	rc = warm_start(m.ns, m.store, cfg.warmers, (int)cfg.warm_nice, !m.reattached || !warmed,
	                &m.warm);
	if (rc < 0) {
		log_error("cannot start the warmers: %s", strerror(-rc));
		goto out;
	}
	struct rpc_opts ro = {
		.socket_path = cfg.socket_path,
		.workers = cfg.workers,
		.max_conns = cfg.max_conns,
		.idle_timeout_s = cfg.idle_timeout_s,
		.max_frame = cfg.max_frame,
		.max_ops = cfg.max_ops,
		.max_reply = cfg.max_reply,
		.hello_timeout_s = cfg.hello_timeout_s,
		.frame_timeout_s = cfg.frame_timeout_s,
		.max_prehello = cfg.max_prehello,
		.busy_poll_us = cfg.busy_poll_us,
		.conn_output_max = cfg.conn_output_max,
		.output_max = cfg.output_max,
		.shm_fd = m.shm->ro_fd,
		.shm_size = m.shm->size,
		.area_fd = m.area->fd,
		.area_size = m.area->size,
		.shm_version = MC_SHM_VERSION,
	};
	rc = rpc_start(&ro, &m, &m.rpc);
	if (rc < 0) {
		if (rc == -EADDRINUSE)
			log_error("socket %s is in use by another server", cfg.socket_path);
		else
			log_error("cannot listen on %s: %s", cfg.socket_path, strerror(-rc));
		goto out;
	}
	if (strcmp(cfg.admin_addr, "none") != 0) {
		struct admin *ad;
		rc = admin_start(cfg.admin_addr, cfg.admin_remote, mcd_fill_stats, &m, &ad);
		if (rc == 0)
			atomic_store_explicit(&m.admin, ad, memory_order_release);
		if (rc == -EPERM)
			log_error("--admin %s: not a loopback address; add --admin-allow-remote "
			          "(admin-allow-remote = true in the config file) to listen on it",
			          cfg.admin_addr);
		else if (rc < 0)
			log_error("cannot serve the admin endpoint on %s: %s", cfg.admin_addr,
			          strerror(-rc));
		if (rc < 0) {
			goto out;
		}
	}
	log_info("mcached %s serving: socket %s, data %s, admin %s, cache %llu bytes, %u workers%s",
	         MC_VERSION, cfg.socket_path, cfg.data_dir,
	         m.admin ? admin_address(m.admin) : "none", (unsigned long long)m.shm->size,
	         cfg.workers, cfg.sync ? ", synchronous durability" : "");
	char ready[256];
	snprintf(ready, sizeof(ready), "serving on %s", cfg.socket_path);
	notify_ready(ready);

	for (;;) {
		int sig;
		if (sigwait(&sigs, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			/* Re-read the command line and config file: the log level
			 * changes now, other settings at the next start. */
			if (config_reload(&cfg, argc, argv, stderr) == 0) {
				log_set_level((enum log_level)cfg.log_level);
				int src = slowlog_configure(m.slowlog, cfg.slowlog_ms * 1000ull,
				                            cfg.slowlog_len);
				log_info("SIGHUP: settings re-read; log level %s; slow log %u ms, "
				         "%u entries%s",
				         log_level_name((enum log_level)cfg.log_level), cfg.slowlog_ms,
				         cfg.slowlog_len, src < 0 ? " (out of memory: not changed)" : "");
			} else {
				log_error("SIGHUP: settings not re-read (see above); nothing changed");
			}
			continue;
		}
		log_info("%s: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
		notify_stopping();
		break;
	}
	status = 0;
out:
	/* Reverse order: no new requests, then the last commit, then the rest.
	 * rpc_stop first, since it waits for replies held for a commit; the
	 * committer's deadline bounds that wait. */
	if (m.commit)
		commit_shutdown(m.commit, cfg.shutdown_timeout_s * 1000u);
	/* The admin thread stops first (it reads the RPC server's figures);
	 * its struct stays until the workers, which read its counter for
	 * OP_STATS, are gone. */
	admin_halt(m.admin);
	if (m.rpc)
		rpc_stop(m.rpc);
	admin_stop(m.admin);
	/* Kept for a warm restart: a warm-up that was over need not run again. */
	warmed = (m.reattached && warmed) || warm_done(m.warm);
	warm_stop(m.warm);
	m.warm = NULL;
	if (m.ns)
		shrink_stop(m.ns);
	/* Clients reading the segment must stop trusting it. */
	if (m.shm)
		atomic_store_explicit(&m.shm->hdr->closed, 1, memory_order_release);
	if (m.commit)
		commit_stop(m.commit);
	if (m.ns) {
		struct ns_backlog bl;
		ns_journal_backlog(m.ns, &bl);
		if (bl.records) {
			log_error("stopping with %llu journal records (%llu bytes, %u batches) "
			          "uncommitted: the store kept failing for %u s",
			          (unsigned long long)bl.records, (unsigned long long)bl.bytes,
			          bl.batches, cfg.shutdown_timeout_s);
			if (status == 0)
				status = 3;
		} else if (status == 0) {
			log_info("all changes committed; bye");
		}
	}
	if (cfg.shm_path && m.shm && m.ns && status == 0) {
		const char *why;
		rc = restart_save(cfg.shm_path, m.shm, m.ns, m.store, warmed, &why);
		if (rc == 0)
			log_info("segment %s kept for a warm restart", cfg.shm_path);
		else
			log_warn("segment %s not kept for a warm restart: %s", cfg.shm_path,
			         why ? why : strerror(-rc));
	}
	ns_free(m.ns);
	area_destroy(m.area);
	shm_destroy(m.shm);
	store_close(m.store);
	slowlog_free(m.slowlog);
	clients_free(m.clients);
	watch_hub_free(m.watch);
	config_free(&cfg);
	return status;
}
