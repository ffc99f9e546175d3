import hashlib, io, sys, zipfile, torch
for p in sys.argv[1:]:
    z = zipfile.ZipFile(p)
    sd = torch.load(io.BytesIO(z.read("policy.pth")), map_location="cpu", weights_only=True)
    h = hashlib.sha256()
    for k, v in sd.items():
        h.update(k.encode()); h.update(v.numpy().tobytes())
    print(p.split("/")[-3], p.split("/")[-1], h.hexdigest()[:16])
