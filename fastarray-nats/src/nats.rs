//! [`NatsBus`]: the [`Bus`] on a NATS server or cluster, through
//! `async-nats`, with a non-blocking face for a game's loop.

use std::sync::mpsc;

use futures_util::StreamExt;
use tokio::runtime::Handle;

use crate::bus::{Bus, BusError, BusMessage, Subscription};

/// Messages a subscription holds before the oldest are dropped (counted in
/// [`NatsSubscription::dropped`]): a relay that stops reading must not
/// grow without bound; the feed repairs what was dropped from a snapshot.
pub const SUBSCRIPTION_CAPACITY: usize = 4_096;

/// A connection to NATS (one server, or any node of a cluster: the client
/// moves to another node when one fails, and resubscribes there).
///
/// The I/O runs on a tokio runtime, the caller's ([`Handle`]); the game
/// calls plain methods that never wait: [`publish`](Bus::publish) queues
/// the message for a task that hands the messages to the client in order,
/// and each subscription's task
/// puts what arrives in a bounded queue that
/// [`try_next`](Subscription::try_next) drains.
#[derive(Clone, Debug)]
pub struct NatsBus {
    client: async_nats::Client,
    runtime: Handle,
    /// The publishes, in order, to the one task that hands them to the
    /// client: a publish costs the game a queue push, not a wait.
    publishes: tokio::sync::mpsc::UnboundedSender<Command>,
}

/// What the publishing task does, in order.
#[derive(Debug)]
enum Command {
    /// Publish a message.
    Publish {
        subject: String,
        reply: Option<String>,
        payload: Vec<u8>,
    },
    /// Flush what was published before, then say how it went.
    Flush(mpsc::SyncSender<Result<(), String>>),
}

impl NatsBus {
    /// Connects to the NATS servers at `urls` (`nats://host:port`, one per
    /// node; the client tries them in turn, and learns the others from the
    /// cluster), waiting for the first connection.
    ///
    /// # Errors
    /// [`BusError::Connect`] if no server answers.
    pub fn connect(runtime: &Handle, urls: &[String], name: &str) -> Result<Self, BusError> {
        let urls: Vec<async_nats::ServerAddr> = urls
            .iter()
            .map(|url| url.parse())
            .collect::<Result<_, _>>()
            .map_err(|error: std::io::Error| BusError::Connect(error.to_string()))?;
        // Once connected, the client reconnects for ever (to any node it
        // knows of): a game keeps running while a node restarts, and
        // messages published meanwhile wait in the client's buffer.
        let options = async_nats::ConnectOptions::new()
            .name(name)
            .max_reconnects(None);
        let client = block_on(runtime, async move {
            tokio::time::timeout(
                std::time::Duration::from_secs(10),
                options.connect(urls.as_slice()),
            )
            .await
        })
        .map_err(|_| BusError::Connect("no server answered within 10 s".into()))?
        .map_err(|error| BusError::Connect(error.to_string()))?;
        let (publishes, mut queue) = tokio::sync::mpsc::unbounded_channel::<Command>();
        let publisher = client.clone();
        runtime.spawn(async move {
            while let Some(command) = queue.recv().await {
                match command {
                    // Refused only once the client is closed, when every
                    // later publish would be too: the bus's own loss, which
                    // the feed repairs.
                    Command::Publish {
                        subject,
                        reply: Some(reply),
                        payload,
                    } => {
                        let _ = publisher
                            .publish_with_reply(subject, reply, payload.into())
                            .await;
                    }
                    Command::Publish {
                        subject, payload, ..
                    } => {
                        let _ = publisher.publish(subject, payload.into()).await;
                    }
                    Command::Flush(done) => {
                        let flushed = publisher.flush().await.map_err(|e| e.to_string());
                        let _ = done.send(flushed);
                    }
                }
            }
        });
        Ok(Self {
            client,
            runtime: runtime.clone(),
            publishes,
        })
    }

    /// The `async-nats` client, for what this crate does not wrap.
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// Waits until every message published so far reached the server.
    ///
    /// # Errors
    /// [`BusError::Publish`] if the connection is closed.
    pub fn flush(&self) -> Result<(), BusError> {
        let (done, flushed) = mpsc::sync_channel(1);
        let stopped = || BusError::Publish("the bus's runtime has stopped".into());
        self.publishes
            .send(Command::Flush(done))
            .map_err(|_| stopped())?;
        flushed
            .recv()
            .map_err(|_| stopped())?
            .map_err(BusError::Publish)
    }
}

/// Runs `future` to its end on `runtime`, from a thread outside it.
fn block_on<F: Future + Send + 'static>(runtime: &Handle, future: F) -> F::Output
where
    F::Output: Send + 'static,
{
    let (done, result) = mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = done.send(future.await);
    });
    result
        .recv()
        .expect("the runtime dropped a task it was given")
}

impl Bus for NatsBus {
    type Subscription = NatsSubscription;

    fn publish(
        &self,
        subject: &str,
        reply: Option<&str>,
        payload: Vec<u8>,
    ) -> Result<(), BusError> {
        let max = self.max_payload();
        if max > 0 && payload.len() > max {
            return Err(BusError::Publish(format!(
                "{} bytes is more than the server's maximum payload of {} bytes",
                payload.len(),
                max
            )));
        }
        self.publishes
            .send(Command::Publish {
                subject: subject.to_owned(),
                reply: reply.map(str::to_owned),
                payload,
            })
            .map_err(|_| BusError::Publish("the bus's runtime has stopped".into()))
    }

    fn subscribe(&self, subject: &str) -> Result<NatsSubscription, BusError> {
        let client = self.client.clone();
        let subject = subject.to_owned();
        let mut subscriber = block_on(
            &self.runtime,
            async move { client.subscribe(subject).await },
        )
        .map_err(|error| BusError::Subscribe(error.to_string()))?;
        let (sender, queue) = mpsc::sync_channel(SUBSCRIPTION_CAPACITY);
        let dropped = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = dropped.clone();
        self.runtime.spawn(async move {
            while let Some(message) = subscriber.next().await {
                let message = BusMessage {
                    subject: message.subject.to_string(),
                    reply: message.reply.map(|reply| reply.to_string()),
                    payload: message.payload.to_vec(),
                };
                match sender.try_send(message) {
                    Ok(()) => {}
                    Err(mpsc::TrySendError::Full(_)) => {
                        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    // The subscription was dropped: unsubscribe.
                    Err(mpsc::TrySendError::Disconnected(_)) => break,
                }
            }
        });
        Ok(NatsSubscription { queue, dropped })
    }

    fn new_inbox(&self) -> String {
        self.client.new_inbox()
    }

    fn max_payload(&self) -> usize {
        self.client.server_info().max_payload
    }
}

/// A subscription of a [`NatsBus`]: what arrived on its subject, in a
/// bounded queue.
#[derive(Debug)]
pub struct NatsSubscription {
    queue: mpsc::Receiver<BusMessage>,
    dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl NatsSubscription {
    /// Messages dropped because the queue was full (the game did not take
    /// them for [`SUBSCRIPTION_CAPACITY`] messages).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Subscription for NatsSubscription {
    fn try_next(&mut self) -> Option<BusMessage> {
        self.queue.try_recv().ok()
    }
}
