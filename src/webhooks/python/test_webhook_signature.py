"""Checks webhook_signature against the shared vectors that the TypeScript
signer writes (test/webhook-signature-vectors.json). Run: python3 -m unittest -v"""

import json
import pathlib
import unittest

from webhook_signature import WebhookSignatureError, verify_webhook_signature

VECTORS = pathlib.Path(__file__).resolve().parents[3] / "test" / "webhook-signature-vectors.json"


class SharedVectors(unittest.TestCase):
    def test_vectors(self) -> None:
        data = json.loads(VECTORS.read_text(encoding="utf-8"))
        self.assertTrue(data["vectors"])
        for v in data["vectors"]:
            with self.subTest(v["name"]):
                body = v["body"].encode("utf-8")
                kwargs = {"tolerance_seconds": data["tolerance_seconds"], "now": v["now"]}
                if v["valid"]:
                    self.assertTrue(verify_webhook_signature(body, v["header"], v["secret"], **kwargs))
                else:
                    with self.assertRaises(WebhookSignatureError) as caught:
                        verify_webhook_signature(body, v["header"], v["secret"], **kwargs)
                    self.assertEqual(caught.exception.reason, v["reason"])
        print(f"checked {len(data['vectors'])} vectors")


if __name__ == "__main__":
    unittest.main()
