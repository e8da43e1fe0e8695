//! `sessions rewind-plan|rewind <id> --sequence N`: three edits of an exec run rewound to
//! before the first (files byte for byte, the log cut, Zero's lines), and a file someone else
//! changed since refused unless `--force`.

mod common;

use std::path::Path;

use common::{session_events, Sandbox};
use serde_json::json;

const ORIGINAL: &[u8] = b"v0 \xc3\xa9t\xc3\xa9\r\nkeep me\n";

/// An exec run writing `a.txt` twice and creating `b.txt`; its session id and the sequence
/// of its first checkpoint.
fn edit(sb: &Sandbox) -> (String, u64) {
    std::fs::write(sb.work().join("a.txt"), ORIGINAL).expect("write");
    let script = common::tool_script(
        json!([
            ["w1", "write_file", {"path": "a.txt", "content": "v1"}],
            ["w2", "write_file", {"path": "a.txt", "content": "v2"}],
            ["w3", "write_file", {"path": "b.txt", "content": "new"}]
        ]),
        "edited",
    );
    let script = sb.script("edits.json", &script);
    let run = sb.exec_script(&script, &["--skip-permissions-unsafe", "edit"], "");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let checkpoints = run.of("checkpoint");
    assert_eq!(checkpoints.len(), 3, "{}", run.stdout);
    let first = checkpoints[0]["checkpoint"]["sequence"]
        .as_u64()
        .expect("sequence");
    assert_eq!(std::fs::read(sb.work().join("a.txt")).expect("read"), b"v2");
    (run.session_id(), first)
}

fn read(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

#[test]
fn three_edits_rewound_to_before_the_first_restore_every_byte_and_cut_the_log() {
    let sb = Sandbox::new();
    let (id, first) = edit(&sb);
    let before = session_events(&sb.sessions(), &id).len();
    let seq = first.to_string();

    let plan = sb.run(
        &[
            "sessions",
            "rewind-plan",
            &id,
            "--sequence",
            &seq,
            "--exclude-target",
        ],
        "",
    );
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let kept = first - 1;
    assert_eq!(
        plan.stdout,
        format!(
            "Zero session rewind plan\nsession: {id}\ntarget: {id}:{first}\nkept: {kept}\n\
             dropped: {}\n",
            before as u64 - kept
        )
    );
    let json = sb.run(
        &["sessions", "rewind-plan", &id, "--sequence", &seq, "--json"],
        "",
    );
    let json: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(json["targetSequence"], first);
    assert_eq!(json["keepTarget"], true);
    assert_eq!(json["keptCount"], first);
    assert!(json.get("changedSince").is_none(), "{json}");

    let rewound = sb.run(
        &[
            "sessions",
            "rewind",
            &id,
            "--sequence",
            &seq,
            "--exclude-target",
        ],
        "",
    );
    assert_eq!(rewound.code, 0, "{}", rewound.stderr);
    assert_eq!(
        rewound.stdout,
        format!("Rewound {id} to sequence {kept}: 1 file(s) restored, 1 deleted, 0 skipped.\n")
    );
    assert_eq!(
        read(&sb.work().join("a.txt")).as_deref(),
        Some(ORIGINAL),
        "byte for byte"
    );
    assert!(!sb.work().join("b.txt").exists());
    let events = session_events(&sb.sessions(), &id);
    let (marker, cut) = events.split_last().expect("events");
    assert_eq!(cut.len() as u64, kept);
    assert!(cut.iter().all(|e| e["sequence"].as_u64() <= Some(kept)));
    assert_eq!(marker["type"], "session_rewind");
    assert_eq!(marker["payload"]["targetSequence"], kept);
    assert_eq!(marker["payload"]["report"]["filesRestored"], 1);
}

#[test]
fn a_file_changed_since_is_reported_and_kept_unless_forced() {
    let sb = Sandbox::new();
    let (id, first) = edit(&sb);
    std::fs::write(sb.work().join("a.txt"), "the user's own edit").expect("write");
    let seq = first.to_string();
    let plan = sb.run(
        &[
            "sessions",
            "rewind-plan",
            &id,
            "--sequence",
            &seq,
            "--exclude-target",
        ],
        "",
    );
    assert!(
        plan.stdout.ends_with("changed since: a.txt\n"),
        "{}",
        plan.stdout
    );
    let refused = sb.run(
        &[
            "sessions",
            "rewind",
            &id,
            "--sequence",
            &seq,
            "--exclude-target",
        ],
        "",
    );
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert_eq!(
        refused.stderr,
        "[zero] rewind refused: 1 file(s) changed since the agent's last change: a.txt. \
         Nothing was changed; rerun with --force to overwrite them.\n"
    );
    assert_eq!(
        read(&sb.work().join("a.txt")).as_deref(),
        Some(&b"the user's own edit"[..])
    );
    assert!(sb.work().join("b.txt").exists(), "nothing changed");
    let forced = sb.run(
        &[
            "sessions",
            "rewind",
            &id,
            "--sequence",
            &seq,
            "--exclude-target",
            "--force",
        ],
        "",
    );
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert_eq!(read(&sb.work().join("a.txt")).as_deref(), Some(ORIGINAL));
}

#[test]
fn bad_requests_get_zeros_errors() {
    let sb = Sandbox::new();
    let (id, _) = edit(&sb);
    let cases: [(&[&str], i32, &str); 5] = [
        (
            &["sessions", "rewind", &id],
            1,
            "[zero] rewind target event id or sequence is required\n",
        ),
        (
            &["sessions", "rewind-plan", &id, "--sequence", "999"],
            2,
            "[zero] rewind target sequence 999 was not found\n",
        ),
        (
            &["sessions", "rewind-plan", "--sequence", "0", &id],
            2,
            "[zero] invalid --sequence \"0\". Expected a positive integer.\n",
        ),
        (
            &["sessions", "rewind-plan", "../x", "--sequence", "1"],
            2,
            "[zero] invalid zero session id \"../x\"\n",
        ),
        (
            &["sessions", "list", "--sequence", "1"],
            2,
            "[zero] --sequence, --event, and --exclude-target are only valid for sessions \
             rewind-plan and rewind\n",
        ),
    ];
    for (args, code, stderr) in cases {
        let run = sb.run(args, "");
        assert_eq!((run.code, run.stderr.as_str()), (code, stderr), "{args:?}");
        assert!(run.stdout.is_empty());
    }
    let help = sb.run(&["sessions", "--help"], "");
    assert!(help.stdout.contains("rewind-plan <id>"), "{}", help.stdout);
}
