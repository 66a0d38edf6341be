"""objectlog for asyncio programs (docs/aio.md): AIOObjectLog, AIOProducer, in aiokafka's
shapes, on the threaded client's own stores and services awaited on the event loop."""

from objectlog.aio.admin import AIOAdminClient
from objectlog.aio.consumer import AIOConsumer, ConsumerRebalanceListener
from objectlog.aio.log import AIOObjectLog
from objectlog.aio.producer import AIOProducer

__all__ = [
    "AIOAdminClient",
    "AIOConsumer",
    "AIOObjectLog",
    "AIOProducer",
    "ConsumerRebalanceListener",
]
