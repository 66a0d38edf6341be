import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's own Java client (kafka-clients 3.9) as a transactional producer and as read_committed
 * and read_uncommitted consumers of objectlog's Kafka agent, printing what it sees one fact per
 * line for tests/functional/test_kafka_java_transactions.py to assert on. The topics (2
 * partitions each) are made by the test.
 *
 * usage: java TxnChecks BOOTSTRAP commit-abort TOPIC_A TOPIC_B
 *        java TxnChecks BOOTSTRAP offsets TOPIC_IN TOPIC_OUT GROUP
 *        java TxnChecks BOOTSTRAP fence TOPIC
 *        java TxnChecks BOOTSTRAP timeout TOPIC
 */
public class TxnChecks {
    static String bootstrap;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        switch (args[1]) {
            case "commit-abort" -> commitAbort(args[2], args[3]);
            case "offsets" -> offsets(args[2], args[3], args[4]);
            case "fence" -> fence(args[2]);
            case "timeout" -> timeout(args[2]);
            default -> throw new IllegalArgumentException("unknown check " + args[1]);
        }
    }

    static KafkaProducer<String, String> producer(String transactionalId, int timeoutMs) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, Integer.toString(timeoutMs));
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        KafkaProducer<String, String> made = new KafkaProducer<>(props);
        made.initTransactions();
        return made;
    }

    static KafkaConsumer<String, String> consumer(String group, String isolation) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        if (group != null) {
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(props);
    }

    /** Prints "read ISOLATION TOPIC v1,v2,..." (sorted): every record a consumer at that level
     * reads from both partitions, polling until it has at least `atLeast` and a poll is empty. */
    static void read(String topic, String isolation, int atLeast) {
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = consumer(null, isolation)) {
            consumer.assign(List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)));
            consumer.seekToBeginning(consumer.assignment());
            long deadline = System.currentTimeMillis() + 20_000;
            boolean idle = false;
            while ((got.size() < atLeast || !idle) && System.currentTimeMillis() < deadline) {
                int before = got.size();
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(250))) {
                    got.add(record.value());
                }
                idle = got.size() == before;
            }
        }
        Collections.sort(got);
        System.out.println("read " + isolation + " " + topic + " " + String.join(",", got));
    }

    static void readBoth(String topic, int committed, int everything) {
        read(topic, "read_committed", committed);
        read(topic, "read_uncommitted", everything);
    }

    /** A transaction over both topics and partitions committed, the next aborted after its
     * records were written, then one more committed. */
    static void commitAbort(String a, String b) throws Exception {
        try (KafkaProducer<String, String> p = producer("java-writer", 60_000)) {
            p.beginTransaction();
            for (int i = 0; i < 8; i++) {
                p.send(new ProducerRecord<>(i % 2 == 1 ? a : b, (i / 2) % 2, null, "committed-" + i));
            }
            p.commitTransaction();
            p.beginTransaction();
            for (int i = 0; i < 4; i++) {
                p.send(new ProducerRecord<>(a, i % 2, null, "aborted-" + i));
                p.send(new ProducerRecord<>(b, i % 2, null, "aborted-" + i));
            }
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(a, 0, null, "after"));
            p.commitTransaction();
        }
        readBoth(a, 5, 9);
        readBoth(b, 4, 8);
    }

    /** Consume-transform-produce: the group's offsets, sent to an aborted transaction, then to
     * a committed one (sendOffsetsToTransaction with the consumer's ConsumerGroupMetadata). */
    static void offsets(String in, String out, String group) throws Exception {
        try (KafkaProducer<String, String> feed = producer("java-feed", 60_000)) {
            feed.beginTransaction();
            for (int i = 0; i < 4; i++) {
                feed.send(new ProducerRecord<>(in, 0, null, "in-" + i));
            }
            feed.commitTransaction();
        }
        TopicPartition source = new TopicPartition(in, 0);
        try (KafkaProducer<String, String> transform = producer("java-transform", 60_000);
                KafkaConsumer<String, String> member = consumer(group, "read_committed")) {
            member.subscribe(List.of(in));
            List<ConsumerRecord<String, String>> inputs = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 20_000;
            while (inputs.size() < 4 && System.currentTimeMillis() < deadline) {
                member.poll(Duration.ofMillis(250)).forEach(inputs::add);
            }
            System.out.println("consumed " + inputs.size());
            long next = inputs.get(inputs.size() - 1).offset() + 1;
            for (boolean commit : new boolean[] {false, true}) {
                transform.beginTransaction();
                for (ConsumerRecord<String, String> record : inputs) {
                    transform.send(new ProducerRecord<>(out, 0, null, record.value().toUpperCase()));
                }
                transform.sendOffsetsToTransaction(
                        Map.of(source, new OffsetAndMetadata(next)), member.groupMetadata());
                if (commit) {
                    transform.commitTransaction();
                } else {
                    transform.abortTransaction();
                }
                OffsetAndMetadata committed =
                        member.committed(java.util.Set.of(source), Duration.ofSeconds(10)).get(source);
                System.out.println("committed after " + (commit ? "commit" : "abort") + " "
                        + (committed == null ? "none" : Long.toString(committed.offset())));
            }
        }
        read(out, "read_committed", 4);
    }

    /** A second producer with the same transactional id fences the first, whose open
     * transaction is aborted. */
    static void fence(String topic) throws Exception {
        KafkaProducer<String, String> first = producer("java-fenced", 60_000);
        first.beginTransaction();
        first.send(new ProducerRecord<>(topic, 0, null, "zombie"));
        first.flush();
        try (KafkaProducer<String, String> second = producer("java-fenced", 60_000)) {
            second.beginTransaction();
            second.send(new ProducerRecord<>(topic, 1, null, "fresh"));
            second.commitTransaction();
        }
        try {
            first.commitTransaction();
            System.out.println("first committed");
        } catch (Exception e) {
            System.out.println("first refused " + e.getClass().getSimpleName());
        } finally {
            first.close(Duration.ZERO);
        }
        readBoth(topic, 1, 2);
    }

    /** Abandoned transactions (transaction.timeout.ms 1000) time out and are aborted: one met
     * by the next InitProducerId of its id, the other by its own producer's commit. */
    static void timeout(String topic) throws Exception {
        KafkaProducer<String, String> replaced = producer("java-abandoned", 1000);
        KafkaProducer<String, String> late = producer("java-late", 1000);
        replaced.beginTransaction();
        replaced.send(new ProducerRecord<>(topic, 0, null, "abandoned"));
        replaced.flush();
        late.beginTransaction();
        late.send(new ProducerRecord<>(topic, 1, null, "late"));
        late.flush();
        Thread.sleep(1500);
        try (KafkaProducer<String, String> successor = producer("java-abandoned", 60_000)) {
            successor.beginTransaction();
            successor.send(new ProducerRecord<>(topic, 0, null, "next"));
            successor.commitTransaction();
        }
        for (Map.Entry<String, KafkaProducer<String, String>> entry
                : Map.of("replaced", replaced, "late", late).entrySet()) {
            try {
                entry.getValue().commitTransaction();
                System.out.println(entry.getKey() + " committed");
            } catch (Exception e) {
                System.out.println(entry.getKey() + " refused " + e.getClass().getSimpleName());
            } finally {
                entry.getValue().close(Duration.ZERO);
            }
        }
        readBoth(topic, 1, 3);
    }
}
