//! Tier 2's timed tests: those that need the Docker engine (one or two), k6 or PostgreSQL on
//! the host, in one binary with its own scheduling. Every test is ignored by a plain
//! `cargo test` (tier 1) and run by `cargo test -- --ignored` (scripts/test); a test whose tool
//! is missing fails, saying how to get it. (Tier 2's tests that need only Python packages,
//! Node or Chromium, and judge no timing, are ignored tests of `tests/offline`.)
//!
//! They run one at a time, in the order below, whatever `--test-threads` says: they share one
//! engine, the host's two cores and fixed names and addresses (the second engine's namespace,
//! the contract's PostgreSQL), and most judge timings a second test beside them would spoil.
//! This is the one place that says so: no test takes a lock of its own.

#![deny(dead_code)]

#[path = "../common/mod.rs"]
mod common;

mod binding;
mod caps;
mod contenders_gate;
mod deploy;
mod disk;
mod engines;
mod freeze;
mod gate;
mod host;
mod images;
mod instances;
mod ledger;
mod links;
mod load_compare;
mod load_k6;
mod monitor;
mod pilot;
mod queue;
mod run;
mod seed;

use std::time::Instant;

use libtest_mimic::{Arguments, Failed, Trial};

/// `module::test` as a trial that is ignored unless asked for (tier 2), timed, its panic its
/// failure.
macro_rules! trials {
    ($($module:ident: [$($test:ident),* $(,)?]),* $(,)?) => {
        vec![$($(trial(concat!(stringify!($module), "::", stringify!($test)), $module::$test)),*),*]
    };
}

fn trial(name: &'static str, test: fn()) -> Trial {
    Trial::test(name, move || timed(name, test)).with_ignored_flag(true)
}

/// Runs one test, saying how long it took (CI's log shows where its minutes go).
fn timed(name: &str, test: fn()) -> Result<(), Failed> {
    let start = Instant::now();
    let outcome = std::panic::catch_unwind(test);
    eprintln!("[testbed] {name}: {:.1} s", start.elapsed().as_secs_f64());
    outcome.map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the test panicked".to_string());
        Failed::from(message)
    })
}

fn main() -> std::process::ExitCode {
    let mut args = Arguments::from_args();
    args.test_threads = Some(1);
    // Images first (every engine test uses them), then what deploys, then whole studies; the
    // tools that need no engine last.
    let tests = trials![
        images: [infrastructure_images_play_their_roles],
        deploy: [
            the_probe_topology_deploys_with_its_caps_and_tears_down,
            killing_feedbench_mid_deploy_then_clean_leaves_nothing,
            the_smoke_topology_serves_the_feed_through_the_fault_proxy,
            clean_waits_for_a_volume_still_held_and_names_one_that_stays_held,
            the_disk_guard_reads_the_engines_data_root_on_this_host,
        ],
        seed: [a_database_from_its_snapshot_holds_the_rows_its_scripts_make],
        monitor: [
            monitors_sample_every_container_every_second,
            the_working_set_counts_the_64_mib_a_container_touched,
        ],
        run: [
            the_smoke_study_runs_end_to_end_and_its_raw_data_shows_the_fault,
            a_database_killed_for_memory_mid_run_is_a_result_and_is_not_run_again,
            a_memory_floor_above_the_host_aborts_the_run_with_its_figure,
            a_ramp_stops_one_step_after_its_knee_and_one_told_not_to_runs_every_step,
            a_clone_whose_images_exist_starts_without_building_within_10_s,
        ],
        ledger: [
            killed_at_five_moments_and_resumed_every_run_completes_exactly_once,
            a_starved_fault_proxy_invalidates_its_run_with_the_figure,
            an_edited_cap_is_refused_until_amended_then_exactly_its_runs_rerun,
            a_contender_failing_its_gate_is_excluded_and_the_study_goes_on,
        ],
        pilot: [a_pilot_at_half_scale_runs_apart_from_the_study_and_the_audit_lists_it],
        gate: [
            both_production_arms_pass_the_gate_on_the_studys_topology_and_a_mutant_still_fails,
            a_gate_past_its_timeout_is_killed_and_fails,
            a_topology_that_cannot_be_deployed_is_a_failed_gate,
        ],
        queue: [
            a_server_that_queues_saturates_at_its_capacity_and_its_backpressure_is_its_failures,
            a_load_generator_capped_far_below_its_rate_breaches_and_is_set_aside,
        ],
        freeze: [a_frozen_replica_s_requests_are_all_recorded_late_or_failed_by_either_generator],
        links: [a_proxy_that_ignores_its_toxics_leaves_its_latency_run_set_aside_with_the_round_trip],
        host: [a_run_beside_a_process_burning_a_core_is_set_aside_as_host_interference],
        binding: [a_ramp_whose_balancer_binds_from_its_third_step_is_stopped_within_two_and_set_aside],
        caps: [a_replica_whose_cpu_cap_changes_while_the_run_runs_sets_the_run_aside_naming_both],
        instances: [two_studies_of_one_plan_at_once_one_is_refused_and_with_share_engine_both_run_apart],
        disk: [a_disk_that_fills_mid_run_aborts_it_with_its_figure_and_resume_completes_the_study],
        load_compare: [native_and_k6_send_the_same_load_and_measure_the_same_latencies_and_knee],
        engines: [
            every_transport_reaches_the_second_engine_and_what_cannot_be_reached_is_named,
            an_image_is_copied_to_the_second_engine_with_its_id_and_config_and_runs_there,
            run_refuses_an_engines_file_it_cannot_use_with_exit_2_at_the_field_and_records_nothing,
            the_smoke_study_runs_with_its_load_generator_on_the_second_engine,
            a_container_on_the_second_engine_is_sampled_through_its_stats_api_when_told_to,
            a_study_split_across_two_groups_runs_each_run_once_and_a_killed_coordinator_is_reaped_on_both,
        ],
        load_k6: [
            a_constant_load_with_warmup_is_an_open_model_with_the_planned_mix,
            a_step_ramp_follows_its_stages_second_by_second,
            a_slow_server_with_few_vus_makes_k6_drop_iterations,
            a_diurnal_curve_runs_and_the_same_seed_sends_the_same_requests,
            measure_output_cost_at_200_per_second,
        ],
        contenders_gate: [
            gate_passes_on_indexed,
            gate_passes_on_production,
            every_mutant_fails_the_gate,
            production_scans_posts_and_indexed_uses_an_index,
            drains_on_sigterm_without_failing_in_flight_requests,
            cut_database_link_fails_fast,
            full_pool_answers_503_after_the_pool_wait,
        ],
    ];
    let conclusion = libtest_mimic::run(&args, tests);

    conclusion.exit_code()
}
