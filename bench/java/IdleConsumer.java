import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Kafka's own Java client (kafka-clients 3.9) as a consumer in a group at its defaults (classic
 * protocol, heartbeat 3 s, auto-commit every 5 s), for bench/idle.py: it prints "assigned N"
 * whenever its assignment changes and "record TOPIC" for the first record of each topic, one
 * line each, flushed at once (the bench takes the time a line arrives). It stops when its
 * standard input closes.
 *
 * usage: java IdleConsumer BOOTSTRAP GROUP TOPIC [TOPIC...]
 */
public class IdleConsumer {
    static volatile boolean stop = false;

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        Set<String> seen = new HashSet<>();
        int assigned = -1;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            Thread stdin = new Thread(() -> {
                try {
                    while (System.in.read() >= 0) {
                        // until the bench closes it
                    }
                } catch (Exception e) {
                    // closed
                }
                stop = true;
                consumer.wakeup();
            });
            stdin.setDaemon(true);
            stdin.start();
            consumer.subscribe(Arrays.asList(args).subList(2, args.length));
            while (!stop) {
                try {
                    for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                        if (seen.add(record.topic())) {
                            System.out.println("record " + record.topic());
                            System.out.flush();
                        }
                    }
                } catch (WakeupException e) {
                    break;
                }
                if (consumer.assignment().size() != assigned) {
                    assigned = consumer.assignment().size();
                    System.out.println("assigned " + assigned);
                    System.out.flush();
                }
            }
        }
    }
}
