import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.common.TopicPartition;

/**
 * What Kafka's own Java AdminClient (kafka-clients 3.9) sees of objectlog's transactions
 * (KIP-664: listTransactions, describeTransactions, describeProducers), printed one fact per
 * line for tests/functional/test_kafka_transactions_admin.py to compare. Each argument after
 * the address is one check, run in order in one JVM:
 *
 *   list                  every transaction: "listing ID producer PID state STATE", by id
 *   longer:MS             those running longer than MS (ListTransactions v1, KIP-994)
 *   describe:ID           "txn ID state S producer PID epoch E timeout MS started yes|no
 *                         partitions T:P,...", or "error ID EXCEPTION"
 *   producers:TOPIC:P     "producer TOPIC:P id PID epoch E last-sequence S txn-start OFFSET|none
 *                         coordinator-epoch N|none", or "error TOPIC:P EXCEPTION"
 */
public class TxnAdminChecks {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(props)) {
            for (int i = 1; i < args.length; i++) {
                String[] check = args[i].split(":", 2);
                switch (check[0]) {
                    case "list" -> list(admin, new ListTransactionsOptions());
                    case "longer" -> list(admin,
                            new ListTransactionsOptions().filterOnDuration(Long.parseLong(check[1])));
                    case "describe" -> describe(admin, check[1]);
                    case "producers" -> producers(admin, check[1]);
                    default -> throw new IllegalArgumentException("unknown check " + args[i]);
                }
            }
        }
    }

    static void list(Admin admin, ListTransactionsOptions options) throws Exception {
        List<String> lines = new ArrayList<>();
        for (TransactionListing listing : admin.listTransactions(options).all().get(30, TimeUnit.SECONDS)) {
            lines.add("listing " + listing.transactionalId() + " producer " + listing.producerId()
                    + " state " + listing.state());
        }
        lines.sort(null);
        lines.forEach(System.out::println);
    }

    static void describe(Admin admin, String id) throws Exception {
        try {
            Map<String, TransactionDescription> described =
                    admin.describeTransactions(List.of(id)).all().get(30, TimeUnit.SECONDS);
            TransactionDescription txn = described.get(id);
            List<String> partitions = new ArrayList<>();
            for (TopicPartition tp : txn.topicPartitions()) {
                partitions.add(tp.topic() + ":" + tp.partition());
            }
            partitions.sort(null);
            System.out.println("txn " + id + " state " + txn.state() + " producer " + txn.producerId()
                    + " epoch " + txn.producerEpoch() + " timeout " + txn.transactionTimeoutMs()
                    + " started " + (txn.transactionStartTimeMs().isPresent() ? "yes" : "no")
                    + " partitions " + String.join(",", partitions));
        } catch (ExecutionException e) {
            System.out.println("error " + id + " " + e.getCause().getClass().getSimpleName());
        }
    }

    static void producers(Admin admin, String where) throws Exception {
        int colon = where.lastIndexOf(':');
        TopicPartition tp = new TopicPartition(where.substring(0, colon),
                Integer.parseInt(where.substring(colon + 1)));
        try {
            PartitionProducerState state =
                    admin.describeProducers(List.of(tp)).partitionResult(tp).get(30, TimeUnit.SECONDS);
            for (ProducerState producer : state.activeProducers()) {
                System.out.println("producer " + where + " id " + producer.producerId()
                        + " epoch " + producer.producerEpoch()
                        + " last-sequence " + producer.lastSequence()
                        + " txn-start " + (producer.currentTransactionStartOffset().isPresent()
                                ? String.valueOf(producer.currentTransactionStartOffset().getAsLong()) : "none")
                        + " coordinator-epoch " + (producer.coordinatorEpoch().isPresent()
                                ? String.valueOf(producer.coordinatorEpoch().getAsInt()) : "none"));
            }
        } catch (ExecutionException e) {
            System.out.println("error " + where + " " + e.getCause().getClass().getSimpleName());
        }
    }
}
