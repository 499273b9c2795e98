"""aiokafka_lead: an asyncio Kafka client with KIP-951 leader discovery."""

__version__ = "0.1.0.dev0"
