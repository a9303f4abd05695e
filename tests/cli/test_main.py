from pmem_advisor.errors import EXIT_USAGE


def test_version(run_cli):
    code, out, _ = run_cli("--version")
    assert code == 0 and out.startswith("pmem-advisor ")


def test_unknown_option_is_usage_error(run_cli):
    code, _, err = run_cli("doctor", "--no-such-option")
    assert code == EXIT_USAGE
    assert err.startswith("pmem-advisor: error:") and "Traceback" not in err


def test_doctor_json_lists_capabilities(run_cli):
    import json

    code, out, _ = run_cli("doctor", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "pmem-advisor.doctor/1"
    names = {c["name"] for c in doc["capabilities"]}
    assert {"native-kernel", "libpmem", "sysbench", "pgbench", "postgres-server",
            "extra [tune]", "extra [embedded]"} <= names
