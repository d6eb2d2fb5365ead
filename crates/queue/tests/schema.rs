//! The published schema of queue messages (`proto-docs/queue-task.schema.json`) describes what
//! this crate writes: its own probe's kind and fields (each service checks its jobs with
//! [`queue::schema`]), and every message round-trips through the wire format.

use queue::Echo;

#[test]
fn the_probe_is_described_and_round_trips() {
    queue::schema::check(&Echo {
        message: "hi".into(),
    });
    let bytes = queue::encode(&Echo {
        message: "hi".into(),
    })
    .unwrap();
    let back = queue::Envelope::from_json(&bytes).unwrap();
    assert_eq!(back.decode::<Echo>().unwrap().message, "hi");
}
