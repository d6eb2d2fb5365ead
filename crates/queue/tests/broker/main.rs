//! Integration tests against a real RabbitMQ (`AMQP_URL`, default the local guest account).
//!
//! Every test uses its own queue-name prefix, so they run in parallel. The broker-restart
//! test (`serial_broker_restart_*`) takes an exclusive lock that every other test here takes
//! shared, so inside this binary it never overlaps them; it still disturbs other test
//! binaries, which is why it is run on its own after them.

mod common;
mod dead_letters;
mod restart;
mod roundtrip;
mod rpc;
mod shutdown;
