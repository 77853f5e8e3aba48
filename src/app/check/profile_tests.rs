//! The check profiles' unit tests (a file of their own: profile.rs passed 500 lines).

use super::*;

#[test]
fn every_profile_gives_jobs_that_check() {
    for profile in [Profile::Quick, Profile::Default, Profile::Thorough] {
        let s = profile.settings();
        raw_job(&s, s.data_set).check().unwrap();
        files_job(&s, true).check().unwrap();
        check_job(&s, s.data_set, true, &Media::default()).check().unwrap();
        let own = Media { library: Some("/srv/media".into()), ..Media::default() };
        check_job(&s, s.data_set, true, &own).check().unwrap();
    }
}

#[test]
fn every_format_reads_one_library_sized_by_the_profile() {
    let s = Profile::Quick.settings();
    let job = check_job(&s, s.data_set, true, &Media::default());
    let streams: Vec<&StreamsSpec> = job.phases.iter().filter_map(|p| p.streams()).collect();
    assert_eq!(streams.len(), 3);
    assert!(streams.iter().all(|p| p.library_size == Some(Bytes::gib(2)) && p.library.is_none()));
    let own = check_job(&s, s.data_set, true, &Media { library: Some("/srv/media".into()), ..Media::default() });
    let own: Vec<&StreamsSpec> = own.phases.iter().filter_map(|p| p.streams()).collect();
    assert!(own.iter().all(|p| p.library_size.is_none() && p.library.as_deref() == Some("/srv/media".as_ref())));
}

#[test]
fn the_data_set_shrinks_to_a_quarter_of_the_free_space() {
    let s = Profile::Default.settings();
    assert_eq!(data_set(&s, Some(Bytes(100 << 30))), Bytes(1 << 30));
    assert_eq!(data_set(&s, Some(Bytes(1 << 30))), Bytes(256 << 20));
    assert_eq!(data_set(&s, None), Bytes(1 << 30));
}

#[test]
fn the_forecasts_are_about_half_a_minute_four_and_fifteen_minutes() {
    // Steps judged once every player is steady last several seconds (a 1080p step near the edge 12–19 s); the
    // default and thorough searches run their edge again, the quick one does not and judges about seven steps (a
    // later format's scaled count and the probes up from it while they pass, or steps down from it): about a
    // minute (46 s on ext4 over a throttled loop device, 75–85 s on a btrfs raid1, 98 s on this VM's disk, whose
    // 1080p took four steps), four minutes and a quarter of an hour with the library written at 1 GB/s.
    let t = |p: Profile| p.settings().forecast_parts().total().as_secs();
    assert!((55..=75).contains(&t(Profile::Quick)), "{} s", t(Profile::Quick));
    let quick = Profile::Quick.settings().forecast_parts();
    assert_eq!((quick.steps, Profile::Quick.settings().confirmations), (7, 0), "fewer steps, as long");
    assert!(quick.fixed <= Duration::from_secs(12), "{:?}", quick.fixed);
    assert!(quick.words().starts_with(&format!("about {}: ", crate::units::format_duration(quick.total()))));
    assert!((180..=300).contains(&t(Profile::Default)), "{} s", t(Profile::Default));
    assert!((600..=1200).contains(&t(Profile::Thorough)), "{} s", t(Profile::Thorough));
}

#[test]
fn a_search_phase_gets_the_arrival_window_the_buffer_and_the_judged_playback() {
    let s = Profile::Default.settings();
    // 1 MiB of 1080p (1 MB/s) is 1.05 s of media: a buffer of 2 s + 2 chunks.
    assert_eq!(s.buffer(&format("1080p")), Duration::from_micros(4_097_152));
    let job = check_job(&s, s.data_set, true, &Media::default());
    let remux = job
        .phases
        .iter()
        .find_map(|p| p.streams().filter(|s| s.format.as_ref().is_some_and(|f| f.name == "2160p-remux")))
        .unwrap();
    assert_eq!(
        (remux.duration, remux.ramp, remux.steady_within),
        (Some(s.judged), Some(s.arrival), Some(s.steady_within(&format("2160p-remux"))))
    );
    assert!(remux.buffer.unwrap() < Duration::from_millis(2300), "10 MB/s: a chunk is 0.1 s of media");
}

#[test]
fn a_low_bitrate_gets_the_time_to_fill_its_buffer_at_ninety_three_percent_of_the_bandwidth() {
    for profile in [Profile::Quick, Profile::Default] {
        let s = profile.settings();
        // 1080p: one chunk (1.048576 s of media) to gain at 7 % to spare: 2 s + 1.048576 × 0.93 ÷ 0.07.
        let hd = s.steady_within(&format("1080p")).as_secs_f64();
        assert!((hd - (2.0 + 1.048576 * 0.93 / 0.07)).abs() < 0.01, "{profile:?}: {hd} s");
        // A remux chunk is 0.1 s of media: the profile's own bound is the longer.
        assert_eq!(s.steady_within(&format("2160p-remux")), s.steady_floor);
        let job = check_job(&s, s.data_set, true, &Media::default());
        let bound = |name: &str| {
            job.phases
                .iter()
                .filter_map(|p| p.streams())
                .find(|p| p.format.as_ref().is_some_and(|f| f.name == name))
                .and_then(|p| p.steady_within)
        };
        assert_eq!(bound("1080p"), Some(s.steady_within(&format("1080p"))), "the job says what the plan judges");
    }
}

#[test]
fn a_real_players_profile_keeps_its_own_buffer_and_is_steady_two_seconds_past_its_start() {
    let generic = Profile::Default.settings();
    let media3 = Settings { player: crate::spec::players::find("media3").unwrap(), ..generic };
    let remux = format("2160p-remux");
    // The generic viewer: the check's own buffer, start and chunk, as before profiles.
    let job = check_job(&generic, Bytes::gib(1), true, &Media::default());
    let spec = job.phases.last().and_then(|p| p.streams()).expect("a stream phase");
    assert_eq!((spec.player.as_deref(), spec.buffer), (Some("generic"), Some(generic.buffer(&format("1080p")))));
    // Media3: its profile's buffer, start and requests; it gains 2 s from its 1 s start, at 93 % of the
    // bandwidth in 26.6 s of wall time.
    let job = check_job(&media3, Bytes::gib(1), true, &Media::default());
    let spec = job.phases.last().and_then(|p| p.streams()).expect("a stream phase");
    assert_eq!((spec.player.as_deref(), spec.buffer, spec.prebuffer, spec.chunk), (Some("media3"), None, None, None));
    let within = media3.steady_within(&remux).as_secs_f64();
    assert!((within - (1.0 + 2.0 * 0.93 / 0.07)).abs() < 0.01, "{within}");
    assert_eq!(media3.start_and_gain(&remux), (Duration::from_secs(1), Duration::from_secs(2)));
}

#[test]
fn each_background_load_runs_every_format_again_after_all_ran_alone() {
    let s = Profile::Quick.settings();
    let media = Media { during: vec![Load::LibraryScan, Load::Transcode], ..Media::default() };
    let job = check_job(&s, s.data_set, true, &media);
    job.check().unwrap();
    let names: Vec<&str> =
        job.phases.iter().filter(|p| p.streams().is_some()).map(|p| p.name.as_deref().unwrap()).collect();
    assert_eq!(names.len(), 9, "{names:?}");
    assert_eq!(names[3], during_phase_name("2160p-remux", Load::LibraryScan));
    assert_eq!(names[8], "streams 1080p H.264 during transcode");
    // The searches beside a load are the searches alone with the load added.
    let alone = job.phases.iter().find(|p| p.name.as_deref() == Some(names[0])).unwrap().streams().unwrap();
    let beside = job.phases.iter().find(|p| p.name.as_deref() == Some(names[3])).unwrap().streams().unwrap();
    let same =
        StreamsSpec { during: None, confirmations: alone.confirmations, precision: alone.precision, ..beside.clone() };
    assert_eq!(same, *alone);
    // One run of its edge, to 10 % at the finest (quick's 20 % stays).
    assert_eq!((beside.confirmations, beside.precision), (Some(0), Some(20.0)));
    let thorough = Profile::Thorough.settings();
    let job = check_job(&thorough, thorough.data_set, true, &media);
    let beside = job.phases.iter().filter_map(|p| p.streams()).find(|s| s.during.is_some()).unwrap();
    assert_eq!((beside.confirmations, beside.precision), (Some(0), Some(10.0)));
    let parts = s.forecast_parts();
    assert_eq!(parts.beside(&[]), parts);
}

/// The forecast counts a search beside a load as the search walks (`WALK_DOWN`): a load that reads moves the
/// edge down from the edge alone, where the search starts, so four steps fail and one passes; a recording's start
/// passes. It counted two steps each: a whole thorough check ran 84 stream steps where it forecast 51.
#[test]
fn the_forecast_counts_the_steps_a_search_beside_a_load_walks_down() {
    let thorough = Profile::Thorough.settings();
    let alone = thorough.forecast_parts();
    let all = alone.beside(&Load::ALL);
    // Four loads that read (library-scan, thumbnails, transcode, scrub) and the recording, for three formats.
    assert_eq!((all.steps, all.failing), (alone.steps + 3 * (4 + 1), 3 * 4 * 4));
    // The whole check of docs/streams.md ran 21 steps alone and 63 beside its loads: 84.
    assert_eq!(all.steps + all.failing, 84);
    // A failing step ends at its first failure: the arrival window and the start-up limit (10 s + 2 s).
    assert_eq!(all.failing_step, Duration::from_secs(12));
    assert_eq!(all.total(), alone.total() + all.step * 15 + Duration::from_secs(12 * 48));
    // Its time: 30 min 49 s against a forecast of 28 min 5 s before, then 30 min 24 s; 28 min 48 s since each
    // format's steps are forecast at their own length (6.5 % short: the library written at 1 GB/s there took
    // longer, it shrank to 1011 MiB on that loop device).
    let words = all.words();
    assert!(
        words.contains("then about 36 capacity-search steps") && words.contains("and about 48 failing steps beside"),
        "{words}"
    );
    let recording = alone.beside(&[Load::Recording]);
    assert_eq!((recording.steps, recording.failing), (alone.steps + 3, 0));
    assert!(!recording.words().contains("beside"), "{}", recording.words());
}

/// The verdict's start-up limit follows `--player`: the generic 2 s, hls.js's 6 s of media (which take about
/// 6 s to arrive near capacity; a 2 s limit would judge start-up at three times real time).
#[test]
fn the_verdicts_start_up_limit_is_the_players_start_threshold() {
    let generic = Profile::Default.settings();
    let hls = Settings { player: crate::spec::players::find("hls.js").unwrap(), ..generic };
    let media = Media::default();
    assert_eq!(format_search(&generic, &media, "1080p").max_startup, Some(Duration::from_secs(2)));
    assert_eq!(format_search(&hls, &media, "1080p").max_startup, Some(Duration::from_secs(6)));
}

/// The forecast follows `--player`: a step lasts the player's start threshold beyond the generic prebuffer and
/// its own fill to steady (`STEADY_AHEAD`, 2 s past that start, not the generic viewer's chunk), fetched near the
/// edge at 90 % of the bandwidth (nine times its media in wall time).
#[test]
fn the_forecast_counts_the_chosen_players_start_and_steady_time() {
    let generic = Profile::Default.settings();
    let with = |name: &str| Settings { player: crate::spec::players::find(name).unwrap(), ..generic };
    let (hls, media3) = (with("hls.js"), with("media3"));
    let secs = |d: Duration| (d.as_secs_f64() * 1000.0).round() / 1000.0;
    // The generic viewer of 1080p gains one chunk (1.048576 s of media) in 9.437 s: a step that passes lasts
    // 3 s of arrivals + that + 4 s judged (16.437 s), one that fails 3 s + that (12.437 s).
    assert_eq!(secs(generic.forecast_step(&format("1080p"))), 14.437);
    // hls.js starts on 6 s of media (4 s beyond the prebuffer) and gains 2 s more in 18 s: passing 29 s, failing
    // 21 s; at 80 Mbit/s its 60 MB cap is 6 s of media, all of it the start: passing 11 s, failing at its 6 s
    // start-up limit (9 s).
    assert_eq!(secs(hls.forecast_step(&format("1080p"))), 25.0);
    assert_eq!(secs(hls.forecast_step(&format("2160p-remux"))), 10.0);
    // Media3 starts on 1 s (1 s less than the prebuffer), then gains 2 s: passing 3 + 1 + 18 + 4 − 2, failing 21.
    assert_eq!(secs(media3.forecast_step(&format("1080p"))), 22.5);
    let (g, h, m) = (generic.forecast_parts(), hls.forecast_parts(), media3.forecast_parts());
    assert!(h.total() > g.total() + Duration::from_secs(60), "{:?} against {:?}", h.total(), g.total());
    assert!(m.steps == g.steps && m.fixed == g.fixed);
}

/// Each format's steps at their own length: near the edge a 1080p step waits for buffers that gain a second of
/// media at a tenth of the bandwidth to spare, a remux's gain a tenth of that. A quick check of this VM's disk
/// forecast 47 s from one mean step and took 98 s (four 1080p steps of 16 s); once its 1080p search starts, the
/// forecast is the time gone and the 1080p search's own.
#[test]
fn each_formats_search_is_forecast_at_its_own_step_length_and_the_forecast_follows_the_searches() {
    let s = Profile::Quick.settings();
    let quick = s.forecast_parts();
    let [hd, hevc, remux] = quick.searches;
    assert!(hd > hevc * 3 / 2 && hevc > remux / 2, "{:?}", quick.searches);
    assert_eq!(s.search_steps(), [2, 2, 3], "the remux is searched first, the later formats start near their edge");
    assert!((quick.step * quick.steps).abs_diff(hd + hevc + remux) < Duration::from_micros(1));
    // As the 1080p search (the third) starts, 80 s into the check: 80 s and the 1080p search.
    let at = Duration::from_secs(80);
    assert_eq!(quick.once_search_starts(2, at), at + hd);
    assert!(quick.once_search_starts(0, quick.fixed).abs_diff(quick.total()) < Duration::from_micros(1));
    assert!(quick.words().contains("(1080p's about 12.9 s: "), "{}", quick.words());
}

/// With the sync engine the raw phases' queue depths become threads of depth 1, so "queue depth 32" still
/// keeps 32 reads in flight; the stream and file phases keep their own threads.
#[test]
fn with_the_sync_engine_a_raw_phases_depth_is_its_threads() {
    let s = Profile::Quick.settings();
    let before = check_job(&s, s.data_set, true, &Media::default());
    let mut job = before.clone();
    depth_as_threads(&mut job);
    let threads = |job: &JobSpec, raw: bool| -> Vec<_> {
        job.phases.iter().filter(|p| at_a_depth(p) == raw).map(|p| (p.jobs, p.iodepth)).collect()
    };
    let depth_in_threads = |n| (Some(n), Some(1));
    assert_eq!(threads(&job, true), [8, 8, 1, 32, 4].map(depth_in_threads), "raw phases, page cache (4)");
    assert_eq!(threads(&job, false), threads(&before, false));
    assert!(!threads(&job, false).is_empty());
    job.check().unwrap();
}

/// The depths become threads wherever the phases read with sync: asked for, or io_uring unavailable and no engine
/// asked for; never when io_uring (or null) is asked for or available.
#[test]
fn the_sync_engine_is_asked_for_or_the_fallback_where_io_uring_is_missing() {
    let here = crate::plan::Facts::directory(None);
    let missing = crate::plan::Facts { io_uring: Err("blocked by seccomp".into()), ..here.clone() };
    assert!(reads_with_sync(Some(EngineChoice::Sync), &here));
    assert!(reads_with_sync(None, &missing));
    assert!(!reads_with_sync(None, &here));
    assert!(!reads_with_sync(Some(EngineChoice::Null), &missing));
}
