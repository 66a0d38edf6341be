import threading
from tests.test_faults import read_values

def test_shared_producer_small_buffer(log):
    log.create_topic("t")
    producer = log.producer(linger_ms=1, batch_bytes=700, buffer_memory=1)
    futures = {}
    def run(i):
        for j in range(30):
            futures[(i, j)] = producer.send("t", b"%02d-%03d" % (i, j))
    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    producer.flush()
    errors = []
    acked = []
    for k, f in futures.items():
        try:
            acked.append((f.result(timeout=30).offset, b"%02d-%03d" % k))
        except Exception as e:
            errors.append(repr(e))
    producer.close()
    values = read_values(log, "t")
    print(len(values), len(set(values)), len(acked), errors[:3])
    assert not errors
    assert len(values) == 240 == len(set(values))
    assert sorted(acked) == list(enumerate(values))
