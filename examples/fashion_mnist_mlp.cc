// Fashion-MNIST with a multi-layer perceptron: 784 -> 512 -> 512 -> 10 with
// ReLU, softmax cross-entropy, trained with any of the optimizers.
//
//   build/examples/fashion_mnist_mlp                  # Adam, 5 epochs
//   build/examples/fashion_mnist_mlp --optimizer=sgd --learning_rate=0.1
//
// Prints a progress bar per epoch (step, mean loss, examples/s), then the
// test accuracy (about 88-89% after 5 epochs with the defaults) and the
// training time.
//
// On a cluster (Note [Replicated example] in examples/distributed_training.h):
//   scripts/local_cluster.sh 1 2 -- build/examples/fashion_mnist_mlp
//       --optimizer=sgd --learning_rate=0.1 [--sync_replicas]   (one line)
//   scripts/local_cluster.sh 0 2 -- build/examples/fashion_mnist_mlp
//       --optimizer=sgd --learning_rate=0.1 --allreduce          (one line)
#include "examples/fashion_mnist_common.h"
#ifndef RUNNEL_NO_CLUSTER  // Built without gRPC: one process only.
#include "examples/distributed_training.h"
#endif

using namespace runnel;  // NOLINT: an example reads better this way.

int main(int argc, char** argv) {
  examples::Flags flags;  // 5 epochs, batch 64, Adam, lr 1e-3,
  flags.decay = 0.7;      // multiplied by 0.7 after each epoch.
  examples::ParseFlags(argc, argv, "fashion_mnist_mlp", &flags);

  Scope root = Scope::NewRootScope();
#ifndef RUNNEL_NO_CLUSTER
  examples::ClusterContext cluster;
  const bool distributed = examples::SetUpCluster(flags, &cluster);
  if (distributed && cluster.job == "ps") examples::ServeParameters(&cluster);
  // A replica puts its variables on the PS tasks (ReplicaDeviceSetter),
  // unless it all-reduces its gradients with the others.
  std::optional<training::AllReduceOptions> allreduce;
  if (distributed && flags.allreduce) {
    allreduce = examples::JoinAllReduceGroup(cluster);
  } else if (distributed) {
    root = examples::ReplicaScope(root, cluster);
  }
#endif
  examples::Classifier model;
  examples::MakeInputs(root, flags, TensorShape({784}), &model);
  // The model: two hidden ReLU layers, then the 10 class logits.
  auto h1 =
      training::Dense(root, model.images, 512, training::Activation::kRelu);
  auto h2 = training::Dense(root, h1, 512, training::Activation::kRelu);
  model.logits = training::Dense(root, h2, 10);
  model.loss =
      training::SparseSoftmaxCrossEntropyLoss(root, model.logits, model.labels);
  // Training: the optimizer adds the gradients and the update ops.
  std::unique_ptr<training::Optimizer> optimizer;
#ifndef RUNNEL_NO_CLUSTER
  if (allreduce) {
    model.train_op = examples::BuildTrainOp(
        root, model.loss, flags, /*train_examples=*/60000 / cluster.num_workers,
        &optimizer, &model.grads, &*allreduce);
    return examples::TrainAllReduceReplica(root, model, flags, &cluster);
  }
  if (distributed) {
    std::unique_ptr<training::SyncReplicasOptimizer> sync;
    model.train_op = examples::BuildReplicatedTrainOp(
        root, model.loss, flags, cluster, &optimizer, &sync);
    return examples::TrainReplica(root, model, flags, &cluster, sync.get());
  }
#endif
  model.train_op = examples::BuildTrainOp(root, model.loss, flags,
                                          /*train_examples=*/60000, &optimizer,
                                          &model.grads);
  return examples::TrainAndEvaluate(root, model, flags);
}
