import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;

/**
 * What Kafka's own Java AdminClient (kafka-clients 3.9) sees of objectlog's Kafka agent, printed
 * one fact per line for tests/functional/test_kafka_java.py to compare.
 *
 * usage: java AdminChecks.java BOOTSTRAP topics
 *        java AdminChecks.java BOOTSTRAP groups
 *        java AdminChecks.java BOOTSTRAP describe GROUP...
 */
public class AdminChecks {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(props)) {
            switch (args[1]) {
                case "topics" -> topics(admin);
                case "groups" -> groups(admin);
                case "describe" -> describe(admin, Arrays.asList(args).subList(2, args.length));
                default -> throw new IllegalArgumentException("unknown check " + args[1]);
            }
        }
    }

    /** Every topic, as listTopics() (an all-topics Metadata request) names them. */
    static void topics(Admin admin) throws Exception {
        for (String name : new TreeSet<>(admin.listTopics().names().get(30, TimeUnit.SECONDS))) {
            System.out.println("topic " + name);
        }
    }

    /** Every group with its type (ListGroups v5), then the consumer groups alone. */
    static void groups(Admin admin) throws Exception {
        for (ConsumerGroupListing group : admin.listConsumerGroups().all().get(30, TimeUnit.SECONDS)) {
            System.out.println("group " + group.groupId() + " type "
                    + group.type().map(Object::toString).orElse("none"));
        }
        ListConsumerGroupsOptions consumers = new ListConsumerGroupsOptions()
                .withTypes(Set.of(GroupType.CONSUMER));
        for (ConsumerGroupListing group : admin.listConsumerGroups(consumers).all().get(30, TimeUnit.SECONDS)) {
            System.out.println("consumer-group " + group.groupId());
        }
    }

    /** Each group's type, state and members with their assignments (ConsumerGroupDescribe for
     * KIP-848 groups, DescribeGroups for classic ones). */
    static void describe(Admin admin, List<String> groups) throws Exception {
        Map<String, ConsumerGroupDescription> described =
                admin.describeConsumerGroups(groups).all().get(30, TimeUnit.SECONDS);
        for (String id : groups) {
            ConsumerGroupDescription group = described.get(id);
            System.out.println("group " + id + " type " + group.type() + " state " + group.state()
                    + " members " + group.members().size());
            for (MemberDescription member : group.members()) {
                List<String> partitions = new ArrayList<>();
                for (TopicPartition tp : member.assignment().topicPartitions()) {
                    partitions.add(tp.topic() + ":" + tp.partition());
                }
                partitions.sort(null);
                System.out.println("member " + id + " client " + member.clientId()
                        + " assigned " + String.join(",", partitions));
            }
        }
    }
}
