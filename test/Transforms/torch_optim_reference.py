# Generates the torch.optim numbers in GradientCheckTest.cpp (OptimizerUpdatesMatchTorchOptim).
# Run with the system Python (torch 1.13): /usr/bin/python3 torch_optim_reference.py
import torch, math
def fill(n, k): return torch.tensor([0.5*math.sin(0.37*i + k) for i in range(n)], dtype=torch.float64)
res = {}
for name, mk in [("sgd", lambda p: torch.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)),
                 ("adam", lambda p: torch.optim.Adam([p], lr=0.01, weight_decay=0.1)),
                 ("adamw", lambda p: torch.optim.AdamW([p], lr=0.01, weight_decay=0.1))]:
    p = torch.nn.Parameter(fill(4, 1)); opt = mk(p)
    for t in range(3):
        p.grad = fill(4, 10 + t); opt.step()
    res[name] = p.detach()
for k, v in res.items(): print(k, "{" + ", ".join(repr(float(x)) for x in v) + "}")
