"""objectlog for asyncio programs (docs/aio.md): AIOObjectLog, its producers, consumer and
admin client, in aiokafka's shapes, on the threaded client's own stores and services awaited
on the event loop (objectlog.concurrency)."""

from objectlog.aio.admin import AIOAdminClient
from objectlog.aio.consumer import AIOConsumer, ConsumerRebalanceListener
from objectlog.aio.log import AIOObjectLog
from objectlog.aio.producer import AIOProducer
from objectlog.aio.transactional import AIOTransactionalProducer

__all__ = [
    "AIOAdminClient",
    "AIOConsumer",
    "AIOObjectLog",
    "AIOProducer",
    "AIOTransactionalProducer",
    "ConsumerRebalanceListener",
]
